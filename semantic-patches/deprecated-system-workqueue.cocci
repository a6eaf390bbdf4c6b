// SPDX-License-Identifier: GPL-2.0-only
///
/// Use system_percpu_wq and system_dfl_wq, not system_wq and system_unbound_wq
///
/// system_wq and system_unbound_wq are deprecated for system_percpu_wq and
/// system_dfl_wq (128ea9f6ccfb); since v7.2 the first work queued on them
/// warns (64d8eae3f895).  The patch mode renames the queue, which keeps what
/// the work runs on.
///
//# Only the queue argument as written at the call is read: a system queue
//# stored in a variable first is left to `wqlint scan`.  For trees that
//# declare system_percpu_wq (v6.17 and later, and stable trees that took it).
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes --include-headers
// Requires: 1.1.1
// Keywords: system_wq, system_unbound_wq, queue_work
//

virtual patch
virtual context
virtual org
virtual report

// The calls that take a queue, with a system queue in the queue argument
// (one branch per queue: spatch 1.1.1 and 1.3.0 miss calls after a
// scoped_guard() when the two queues are one disjunction nested in several).
@r@
iterator name scoped_guard;
identifier fn = {queue_work, queue_delayed_work, mod_delayed_work,
	queue_rcu_work, enable_and_queue_work, flush_workqueue,
	__flush_workqueue, drain_workqueue};
identifier fn2 = {queue_work_on, queue_work_node, queue_delayed_work_on,
	mod_delayed_work_on};
expression E;
position p, qq;
symbol system_wq, system_unbound_wq;
@@

(
 fn@p(<+... system_wq@qq ...+>, ...)
|
 fn@p(<+... system_unbound_wq@qq ...+>, ...)
|
 fn2@p(E, <+... system_wq@qq ...+>, ...)
|
 fn2@p(E, <+... system_unbound_wq@qq ...+>, ...)
)

@depends on patch@
position r.qq;
symbol system_wq, system_unbound_wq;
@@

(
- system_wq@qq
+ system_percpu_wq
|
- system_unbound_wq@qq
+ system_dfl_wq
)

@depends on context@
identifier fn;
position r.p;
@@
* fn@p(...)

@script:python depends on org@
p << r.p;
@@
coccilib.org.print_todo(p[0],
	"system_wq and system_unbound_wq are deprecated: use system_percpu_wq or system_dfl_wq")

@script:python depends on report@
p << r.p;
@@
coccilib.report.print_report(p[0],
	"system_wq and system_unbound_wq are deprecated: use system_percpu_wq or system_dfl_wq")
