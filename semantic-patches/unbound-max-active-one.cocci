// SPDX-License-Identifier: GPL-2.0-only
///
/// Unbound workqueue with max_active 1 is not ordered since v6.9
///
/// Before v6.9 an unbound workqueue with max_active 1 ran one work item at a
/// time in queueing order, and callers relied on it.  3bc1e711c26b dropped
/// that implicit ordering: use alloc_ordered_workqueue() where the work items
/// must not run concurrently or out of order.
///
//# The flags and max_active are followed through locals of the calling
//# function.  No patch mode: whether ordering is needed is the maintainer's
//# call.  create_freezable_workqueue() makes such a workqueue too.
//
// Confidence: Moderate
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_workqueue, alloc_ordered_workqueue, WQ_UNBOUND
//

virtual context
virtual org
virtual report

// The calls by name (one match of every function), then by form.
@c@
iterator name scoped_guard;
identifier fn = {alloc_workqueue, alloc_workqueue_lockdep_map,
	devm_alloc_workqueue, create_freezable_workqueue};
position p;
@@
 fn@p(...)

// The API's own create_freezable_workqueue(), reported where it is called.
@api_h@
identifier x, fn;
position c.p;
@@
#define create_freezable_workqueue(x) fn@p(...)

@a@
expression fmt, dev, f, m;
position c.p, pf, pm;
@@
(
 alloc_workqueue@p(fmt, f@pf, m@pm, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f@pf, m@pm, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f@pf, m@pm, ...)
|
 create_freezable_workqueue@p(f@pf@pm)
)

// Flags holding WQ_UNBOUND on some path; the argument of
// create_freezable_workqueue() stands for its flags and max_active.
@unbound exists@
position a.pf, qu;
expression F, E;
local idexpression x;
identifier y;
type T;
assignment operator op = {=, |=};
@@
(
 T y = <+... WQ_UNBOUND ...+>;
 ... when != y = E
 \(F@pf@qu \& <+... y ...+>\)
|
 x op <+... WQ_UNBOUND ...+>;
 ... when != x = E
 \(F@pf@qu \& <+... x ...+>\)
|
 \(F@pf@qu \& <+... WQ_UNBOUND ...+>\)
|
 create_freezable_workqueue(F@pf@qu)
)

// Flags that say ordered already.
@ordered exists@
position a.pf, qd;
expression F, E;
local idexpression x;
identifier y;
type T;
@@
(
 T y = <+... __WQ_ORDERED ...+>;
 ... when != y = E
 \(F@pf@qd \& <+... y ...+>\)
|
 x = <+... __WQ_ORDERED ...+>;
 ... when != x = E
 \(F@pf@qd \& <+... x ...+>\)
|
 \(F@pf@qd \& <+... __WQ_ORDERED ...+>\)
)

// max_active 1, written in the call or given to a local.
@one exists@
position a.pm, qo;
expression M, E;
local idexpression x;
identifier y;
type T;
@@
(
 T y = 1;
 ... when != y = E
 \(M@pm@qo \& y\)
|
 x = 1;
 ... when != x = E
 \(M@pm@qo \& x\)
|
 1@pm@qo
|
 create_freezable_workqueue(M@pm@qo)
)

@r depends on !api_h@
identifier fn;
expression F, M;
position unbound.qu, one.qo, pr, qn != ordered.qd;
@@
(
 fn@pr(..., F@qu@qn, M@qo, ...)
|
 fn@pr(F@qu@qo)
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
	"WQ_UNBOUND workqueue with max_active 1 is not ordered since v6.9: use alloc_ordered_workqueue() if ordering is needed")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"WQ_UNBOUND workqueue with max_active 1 is not ordered since v6.9: use alloc_ordered_workqueue() if ordering is needed")
