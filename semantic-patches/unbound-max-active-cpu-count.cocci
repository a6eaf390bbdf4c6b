// SPDX-License-Identifier: GPL-2.0-only
///
/// Unbound workqueue with max_active derived from a CPU count
///
/// max_active of a WQ_UNBOUND workqueue limits the work items in flight per
/// NUMA node before v6.6, per CPU from v6.6 to v6.8 (636b927eba5b) and in
/// the whole system since v6.9 (5797b1c18919).  A CPU count passed as
/// max_active was meant for one of these: say whether a system-wide limit
/// or a limit per affinity scope is meant.
///
//# The flags and max_active are followed through locals of the calling
//# function.  Fields, macros, module parameters and wrappers are left to
//# `wqlint scan`, which also says what the limit means on the tree's version.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: alloc_workqueue, WQ_UNBOUND, max_active, num_online_cpus
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

// Flags that hold WQ_UNBOUND on some path.
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

@r@
identifier fn;
expression F, M;
position unbound.qu, cpus.qc, pr;
@@

 fn@pr(..., F@qu, M@qc, ...)

@depends on context@
identifier fn;
position r.pr;
@@
* fn@pr(...)

@script:python depends on org@
p << r.pr;
@@
coccilib.org.print_todo(p[0],
	"WQ_UNBOUND workqueue with max_active derived from a CPU count: say whether a global or a per-scope limit is meant")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"WQ_UNBOUND workqueue with max_active derived from a CPU count: say whether a global or a per-scope limit is meant")
