// SPDX-License-Identifier: GPL-2.0-only
///
/// Pass workqueue flags as flags, not as max_active
///
/// The WQ_* flags are enumerators, so a flag written in the max_active
/// argument of alloc_workqueue() compiles: the workqueue does not get the
/// flag, and its limit of work items in flight becomes the flag's bit value
/// (WQ_MEM_RECLAIM: 8, and no rescuer thread).
///
//# The value is followed through locals of the calling function; one that
//# comes through a macro, a field or a wrapper's parameter is left to
//# `wqlint scan`.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes --include-headers
// Requires: 1.1.1
// Keywords: alloc_workqueue, max_active, WQ_MEM_RECLAIM
//

virtual context
virtual org
virtual report

@a@
expression fmt, dev, f, m;
position p, pm;
@@

(
 alloc_workqueue@p(fmt, f, m@pm, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f, m@pm, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f, m@pm, ...)
)

// One value of max_active holds a flag.
@flag exists@
position a.pm, q;
expression M, E;
local idexpression x;
identifier y;
type T;
@@

(
 T y = <+... \(WQ_BH\|WQ_UNBOUND\|WQ_FREEZABLE\|WQ_MEM_RECLAIM\|WQ_HIGHPRI\|
	WQ_CPU_INTENSIVE\|WQ_SYSFS\|WQ_POWER_EFFICIENT\|WQ_PERCPU\) ...+>;
 ... when != y = E
 \(M@pm@q \& <+... y ...+>\)
|
 x = <+... \(WQ_BH\|WQ_UNBOUND\|WQ_FREEZABLE\|WQ_MEM_RECLAIM\|WQ_HIGHPRI\|
	WQ_CPU_INTENSIVE\|WQ_SYSFS\|WQ_POWER_EFFICIENT\|WQ_PERCPU\) ...+>;
 ... when != x = E
 \(M@pm@q \& <+... x ...+>\)
|
 \(M@pm@q \& <+... \(WQ_BH\|WQ_UNBOUND\|WQ_FREEZABLE\|WQ_MEM_RECLAIM\|
	WQ_HIGHPRI\|WQ_CPU_INTENSIVE\|WQ_SYSFS\|WQ_POWER_EFFICIENT\|WQ_PERCPU\)
	...+>\)
)

@r@
identifier fn;
expression M;
position flag.q, pr;
@@

 fn@pr(..., M@q, ...)

@depends on context@
identifier fn;
position r.pr;
@@
* fn@pr(...)

@script:python depends on org@
p << r.pr;
@@
coccilib.org.print_todo(p[0],
	"a WQ_* flag is passed as max_active: the queue does not get the flag, and the flag's bit value becomes its limit of work items in flight")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"a WQ_* flag is passed as max_active: the queue does not get the flag, and the flag's bit value becomes its limit of work items in flight")
