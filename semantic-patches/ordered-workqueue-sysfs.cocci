// SPDX-License-Identifier: GPL-2.0-only
///
/// Ordered workqueue with WQ_SYSFS fails to allocate before v7.1
///
/// Before v7.1 workqueue_sysfs_register() refuses an ordered workqueue with
/// a WARN_ON, and the allocation fails.  a4aa8d94f243 allows it in v7.1.
/// For trees before v7.1: drop WQ_SYSFS, or the ordering if not needed.
///
//# The flags are followed through locals of the calling function.  The
//# tree's version is not known here: `wqlint scan` reports only on trees
//# before v7.1.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_ordered_workqueue, WQ_SYSFS, __WQ_ORDERED
//

virtual context
virtual org
virtual report

// The calls: pf for flags that must say ordered, po where the call adds it.
@a@
iterator name scoped_guard;
expression fmt, dev, f, m;
position p, pf, po;
@@

(
 alloc_workqueue@p(fmt, f@pf, m, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f@pf, m, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f@pf, m, ...)
|
 alloc_ordered_workqueue@p(fmt, f@po, ...)
|
 alloc_ordered_workqueue_lockdep_map@p(fmt, f@po, ...)
|
 devm_alloc_ordered_workqueue@p(dev, fmt, f@po, ...)
|
 drmm_alloc_ordered_workqueue@p(dev, fmt, f@po, ...)
)

// One value of the flags holds WQ_SYSFS, and __WQ_ORDERED unless the call
// adds it.
@sysfs exists@
position a.pf, a.po, q;
expression F, E;
local idexpression x;
identifier y;
type T;
@@

(
 T y = \(<+... __WQ_ORDERED ...+> \& <+... WQ_SYSFS ...+>\);
 ... when != y = E
 \(F@pf@q \& <+... y ...+>\)
|
 x = \(<+... __WQ_ORDERED ...+> \& <+... WQ_SYSFS ...+>\);
 ... when != x = E
 \(F@pf@q \& <+... x ...+>\)
|
 \(F@pf@q \& <+... __WQ_ORDERED ...+> \& <+... WQ_SYSFS ...+>\)
|
 T y = <+... WQ_SYSFS ...+>;
 ... when != y = E
 \(alloc_ordered_workqueue\|alloc_ordered_workqueue_lockdep_map\|
   devm_alloc_ordered_workqueue\|drmm_alloc_ordered_workqueue\)(...,
	\(F@po@q \& <+... y ...+>\), ...)
|
 x = <+... WQ_SYSFS ...+>;
 ... when != x = E
 \(alloc_ordered_workqueue\|alloc_ordered_workqueue_lockdep_map\|
   devm_alloc_ordered_workqueue\|drmm_alloc_ordered_workqueue\)(...,
	\(F@po@q \& <+... x ...+>\), ...)
|
 \(alloc_ordered_workqueue\|alloc_ordered_workqueue_lockdep_map\|
   devm_alloc_ordered_workqueue\|drmm_alloc_ordered_workqueue\)(...,
	\(F@po@q \& <+... WQ_SYSFS ...+>\), ...)
)

@r@
identifier fn;
expression F;
position sysfs.q, pr;
@@

 fn@pr(..., F@q, ...)

@depends on context@
identifier fn;
position r.pr;
@@
* fn@pr(...)

@script:python depends on org@
p << r.pr;
@@
coccilib.org.print_todo(p[0],
	"ordered workqueue with WQ_SYSFS: workqueue_sysfs_register() refuses it with a WARN_ON and the allocation fails (allowed from v7.1, a4aa8d94f243)")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"ordered workqueue with WQ_SYSFS: workqueue_sysfs_register() refuses it with a WARN_ON and the allocation fails (allowed from v7.1, a4aa8d94f243)")
