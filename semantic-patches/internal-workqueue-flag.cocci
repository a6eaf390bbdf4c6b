// SPDX-License-Identifier: GPL-2.0-only
///
/// Do not pass the workqueue code's internal __WQ_* flags
///
/// __WQ_ORDERED, __WQ_LEGACY and the other __WQ_* flags belong to the
/// workqueue API's own macros and kernel/workqueue.c.  A caller that writes
/// one gets what the flag did when it wrote it, not what the API means
/// today: use alloc_ordered_workqueue() for an ordered workqueue and drop
/// __WQ_LEGACY.
///
//# The flags are followed through locals of the calling function.  Files
//# that define the allocation functions themselves are skipped.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_workqueue, __WQ_ORDERED, __WQ_LEGACY
//

virtual context
virtual org
virtual report

// The API's own code: where the allocation functions and their macros are.
@api@
@@

 \(alloc_workqueue\|alloc_workqueue_noprof\)(...) { ... }

@api_h@
identifier x;
expression e;
@@

#define create_workqueue(x) e

// The calls.
@a depends on !api && !api_h@
iterator name scoped_guard;
expression fmt, dev, f, m;
position p, pf;
@@

(
 alloc_workqueue@p(fmt, f@pf, m, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f@pf, m, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f@pf, m, ...)
|
 alloc_ordered_workqueue@p(fmt, f@pf, ...)
|
 alloc_ordered_workqueue_lockdep_map@p(fmt, f@pf, ...)
|
 devm_alloc_ordered_workqueue@p(dev, fmt, f@pf, ...)
|
 drmm_alloc_ordered_workqueue@p(dev, fmt, f@pf, ...)
)

// One value of the flags holds an internal flag.
@internal exists@
position a.pf, q;
expression F, E;
local idexpression x;
identifier y;
type T;
@@

(
 T y = <+... \(__WQ_DESTROYING\|__WQ_DRAINING\|__WQ_ORDERED\|__WQ_LEGACY\|
	__WQ_DEPRECATED\) ...+>;
 ... when != y = E
 \(F@pf@q \& <+... y ...+>\)
|
 x = <+... \(__WQ_DESTROYING\|__WQ_DRAINING\|__WQ_ORDERED\|__WQ_LEGACY\|
	__WQ_DEPRECATED\) ...+>;
 ... when != x = E
 \(F@pf@q \& <+... x ...+>\)
|
 \(F@pf@q \& <+... \(__WQ_DESTROYING\|__WQ_DRAINING\|__WQ_ORDERED\|
	__WQ_LEGACY\|__WQ_DEPRECATED\) ...+>\)
)

@r@
identifier fn;
expression F;
position internal.q, pr;
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
	"internal __WQ_* flag written by the caller: only the workqueue API's own macros and kernel/workqueue.c set these")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"internal __WQ_* flag written by the caller: only the workqueue API's own macros and kernel/workqueue.c set these")
