// SPDX-License-Identifier: GPL-2.0-only
///
/// Say WQ_PERCPU or WQ_UNBOUND in every alloc_workqueue()
///
/// alloc_workqueue() is to become unbound by default: WQ_PERCPU (930c2ea566af)
/// names today's per-CPU default.  A workqueue whose flags name neither
/// changes behaviour silently when the default moves.  The patch mode adds
/// WQ_PERCPU, which keeps today's behaviour; make the workqueue WQ_UNBOUND
/// instead where it need not run on the CPU that queued the work.
///
//# Flags are followed through locals of the calling function; a call is
//# reported only when every flag it can get is one of the WQ_* constants.
//# Flags from parameters, fields, macros, module parameters or wrappers are
//# left to `wqlint scan`.  For trees that define WQ_PERCPU (v6.17 and later).
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_workqueue, WQ_PERCPU, WQ_UNBOUND
//

virtual patch
virtual context
virtual org
virtual report

// The calls by name (one match of every function), then by form.
@c@
iterator name scoped_guard;
identifier fn = {alloc_workqueue, alloc_workqueue_lockdep_map,
	devm_alloc_workqueue};
position p;
@@

 fn@p(...)

// The API's own create_workqueue(), reported where it is called.
@api_h@
identifier x, fn;
position c.p;
@@
#define create_workqueue(x) fn@p(...)

@a@
expression fmt, dev, f, m;
position c.p, pf;
@@

(
 alloc_workqueue@p(fmt, f@pf, m, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f@pf, m, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f@pf, m, ...)
)

// Flags that may name an affinity, or whose value is not known here.
@named@
position a.pf, q;
expression F;
global idexpression g != {WQ_FREEZABLE, WQ_MEM_RECLAIM, WQ_HIGHPRI,
	WQ_CPU_INTENSIVE, WQ_SYSFS, WQ_POWER_EFFICIENT, __WQ_DESTROYING,
	__WQ_DRAINING, __WQ_ORDERED, __WQ_LEGACY, __WQ_DEPRECATED};
@@
 \(F@pf@q \& <+... g ...+>\)

// Flags that hold a local: only these are followed through the function.
@l@
position a.pf, pl;
expression F;
local idexpression x;
@@
 \(F@pf@pl \& <+... x ...+>\)

// A local given such a value, or another local's.
@unknown exists@
position l.pl, q;
expression F, E;
global idexpression g != {WQ_FREEZABLE, WQ_MEM_RECLAIM, WQ_HIGHPRI,
	WQ_CPU_INTENSIVE, WQ_SYSFS, WQ_POWER_EFFICIENT, __WQ_DESTROYING,
	__WQ_DRAINING, __WQ_ORDERED, __WQ_LEGACY, __WQ_DEPRECATED};
local idexpression x, y;
identifier z;
type T;
assignment operator op = {=, |=};
@@

(
 T z = <+... \(g\|y\) ...+>;
 ... when != z = E
 \(F@pl@q \& <+... z ...+>\)
|
 x op <+... \(g\|y\) ...+>;
 ... when != x = E
 \(F@pl@q \& <+... x ...+>\)
)

// Flags from a parameter, or a local not set on some path.
@unset exists@
position l.pl, q;
expression F, E;
local idexpression x;
identifier fn;
@@

 fn(...) {
 ... when != x = E
 \(F@pl@q \& <+... x ...+>\)
 ... when any
 }

@r depends on !api_h@
identifier fn;
expression F;
position a.pf, pr, qn != {named.q, unknown.q, unset.q};
@@

 fn@pr(..., F@pf@qn, ...)

@depends on patch@
position r.qn;
expression F;
@@

(
- 0@qn
+ WQ_PERCPU
|
- F@qn
+ F | WQ_PERCPU
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
	"alloc_workqueue() without WQ_PERCPU or WQ_UNBOUND: say which one, unbound is becoming the default")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"alloc_workqueue() without WQ_PERCPU or WQ_UNBOUND: say which one, unbound is becoming the default")
