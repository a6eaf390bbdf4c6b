// SPDX-License-Identifier: GPL-2.0-only
///
/// Per-CPU workqueue with max_active derived from a CPU count
///
/// max_active of a per-CPU workqueue limits the work items in flight on each
/// CPU: with a CPU count, CPU count squared of them run in the system.  Pass
/// 0 for the default, or a fixed number.
///
//# Flags and max_active are followed through locals of the calling function;
//# reported only when every flag the call can get is a WQ_* constant other
//# than WQ_UNBOUND.  Fields, macros and wrappers are left to `wqlint scan`.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_workqueue, WQ_PERCPU, max_active, num_online_cpus
//

virtual context
virtual org
virtual report

// The calls.
@a@
iterator name scoped_guard;
expression fmt, dev, f, m;
position p, pf, pm;
@@

(
 alloc_workqueue@p(fmt, f@pf, m@pm, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f@pf, m@pm, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f@pf, m@pm, ...)
)

// max_active that is a CPU count (include/linux/cpumask.h), or computed
// from one, on some path.
@cpus exists@
position a.pm, qc;
expression M, E;
identifier y;
symbol num_online_cpus, num_possible_cpus, num_present_cpus, num_active_cpus;
symbol nr_cpu_ids, cpumask_weight;
local idexpression x;
type T;
@@

(
 T y = <+... \(num_online_cpus\|num_possible_cpus\|num_present_cpus\|
	num_active_cpus\|nr_cpu_ids\|NR_CPUS\|cpumask_weight\) ...+>;
 ... when != y = E
 \(M@pm@qc \& <+... y ...+>\)
|
 x = <+... \(num_online_cpus\|num_possible_cpus\|num_present_cpus\|
	num_active_cpus\|nr_cpu_ids\|NR_CPUS\|cpumask_weight\) ...+>;
 ... when != x = E
 \(M@pm@qc \& <+... x ...+>\)
|
 \(M@pm@qc \& <+... \(num_online_cpus\|num_possible_cpus\|num_present_cpus\|
	num_active_cpus\|nr_cpu_ids\|NR_CPUS\|cpumask_weight\) ...+>\)
)

// Flags that may hold WQ_UNBOUND, or whose value is not known here.
@unknown exists@
position a.pf, q;
expression F, E;
global idexpression g != {WQ_PERCPU, WQ_FREEZABLE, WQ_MEM_RECLAIM,
	WQ_HIGHPRI, WQ_CPU_INTENSIVE, WQ_SYSFS, __WQ_DESTROYING,
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

// Flags from a parameter, or from a local not set on some path.
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
expression F, M;
position cpus.qc, pr, qn != {unknown.q, unset.q};
@@

 fn@pr(..., F@qn, M@qc, ...)

@depends on context@
identifier fn;
position r.pr;
@@
* fn@pr(...)

@script:python depends on org@
p << r.pr;
@@
coccilib.org.print_todo(p[0],
	"per-CPU workqueue with max_active derived from a CPU count: the limit applies on every CPU, so in-flight items grow with the square of the CPU count")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"per-CPU workqueue with max_active derived from a CPU count: the limit applies on every CPU, so in-flight items grow with the square of the CPU count")
