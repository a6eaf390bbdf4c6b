// SPDX-License-Identifier: GPL-2.0-only
///
/// Drop WQ_PERCPU from a workqueue that is also WQ_UNBOUND
///
/// The workqueue code keeps WQ_UNBOUND and ignores WQ_PERCPU (and warns since
/// v7.2); alloc_ordered_workqueue() and its forms add WQ_UNBOUND themselves.
/// The patch mode drops WQ_PERCPU, which changes nothing the kernel does.
///
//# Flags are followed through locals of the calling function; flags from
//# parameters, fields, macros or wrappers are left to `wqlint scan`.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_workqueue, alloc_ordered_workqueue, WQ_PERCPU, WQ_UNBOUND
//

virtual patch
virtual context
virtual org
virtual report

// The calls: pf for flags that must hold WQ_UNBOUND, po where the call adds it.
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

// Flags that hold a conditional: its branches are values of their own.
@cond@
position a.pf, qc;
expression F, E1, E2, E3;
@@

 \(F@pf@qc \& <+... E1 ? E2 : E3 ...+>\)

// One value of the flags holds WQ_PERCPU (at pp), and WQ_UNBOUND unless added.
@both exists@
position a.pf, a.po, pp, q != cond.qc;
expression F, E;
local idexpression x;
identifier y;
type T;
@@

(
 T y = \(<+... WQ_UNBOUND ...+> \& <+... WQ_PERCPU@pp ...+>\);
 ... when != y = E
 \(F@pf@q \& <+... y ...+>\)
|
 x = \(<+... WQ_UNBOUND ...+> \& <+... WQ_PERCPU@pp ...+>\);
 ... when != x = E
 \(F@pf@q \& <+... x ...+>\)
|
 \(F@pf@q \& <+... WQ_UNBOUND ...+> \& <+... WQ_PERCPU@pp ...+>\)
|
 T y = <+... WQ_PERCPU@pp ...+>;
 ... when != y = E
 \(alloc_ordered_workqueue\|alloc_ordered_workqueue_lockdep_map\|
   devm_alloc_ordered_workqueue\|drmm_alloc_ordered_workqueue\)(...,
	\(F@po@q \& <+... y ...+>\), ...)
|
 x = <+... WQ_PERCPU@pp ...+>;
 ... when != x = E
 \(alloc_ordered_workqueue\|alloc_ordered_workqueue_lockdep_map\|
   devm_alloc_ordered_workqueue\|drmm_alloc_ordered_workqueue\)(...,
	\(F@po@q \& <+... x ...+>\), ...)
|
 \(alloc_ordered_workqueue\|alloc_ordered_workqueue_lockdep_map\|
   devm_alloc_ordered_workqueue\|drmm_alloc_ordered_workqueue\)(...,
	\(F@po@q \& <+... WQ_PERCPU@pp ...+>\), ...)
)

@r@
identifier fn;
expression F;
position both.q, pr;
@@

 fn@pr(..., F@q, ...)

@depends on patch@
expression E;
position both.pp;
@@

(
- WQ_PERCPU@pp | E
+ E
|
- E | WQ_PERCPU@pp
+ E
|
- WQ_PERCPU@pp
+ 0
)

@depends on context@
identifier fn;
position r.pr;
@@
* fn@pr(...)

@script:python depends on org@
p << r.pr;
@@
coccilib.org.print_todo(p[0],
	"workqueue with both WQ_PERCPU and WQ_UNBOUND: the kernel keeps WQ_UNBOUND and ignores WQ_PERCPU; drop WQ_PERCPU")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"workqueue with both WQ_PERCPU and WQ_UNBOUND: the kernel keeps WQ_UNBOUND and ignores WQ_PERCPU; drop WQ_PERCPU")
