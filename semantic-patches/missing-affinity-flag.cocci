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
// Options: --no-includes --include-headers
// Requires: 1.1.1
// Keywords: alloc_workqueue, WQ_PERCPU, WQ_UNBOUND
//

virtual patch
virtual context
virtual org
virtual report

// The API's own header, whose macros expand to allocations.
@api_h@
identifier x;
expression e;
@@

#define create_workqueue(x) e

// The calls.
@a depends on !api_h@
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
)

// Flags that may name an affinity, or whose value is not known here.
@unknown exists@
position a.pf, q;
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
 \(F@pf@q \& <+... z ...+>\)
|
 x op <+... \(g\|y\) ...+>;
 ... when != x = E
 \(F@pf@q \& <+... x ...+>\)
|
 \(F@pf@q \& <+... g ...+>\)
)

// Flags from a parameter, or a local not set on some path.
@unset exists@
position a.pf, q;
expression F, E;
local idexpression x;
identifier fn;
@@

 fn(...) {
 ... when != x = E
 \(F@pf@q \& <+... x ...+>\)
 ... when any
 }

@r@
identifier fn;
expression F;
position a.p, a.pf, pr, qn != {unknown.q, unset.q};
@@

 fn@p@pr(..., F@pf@qn, ...)

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
