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

// The API's own code: where the allocation functions and their macros are.
@api@
@@

 \(alloc_workqueue\|alloc_workqueue_noprof\)(...) { ... }

@api_h@
identifier x;
expression e;
@@

#define create_workqueue(x) e

@s depends on !api && !api_h@
position q;
symbol system_wq, system_unbound_wq;
@@

\(system_wq@q\|system_unbound_wq@q\)

// The calls that take a queue, with a system queue in the queue argument.
@r@
identifier Q;
expression E;
position s.q, p, qq;
@@

(
 queue_work@p(<+... Q@q@qq ...+>, ...)
|
 queue_work_on@p(E, <+... Q@q@qq ...+>, ...)
|
 queue_work_node@p(E, <+... Q@q@qq ...+>, ...)
|
 queue_delayed_work@p(<+... Q@q@qq ...+>, ...)
|
 queue_delayed_work_on@p(E, <+... Q@q@qq ...+>, ...)
|
 mod_delayed_work@p(<+... Q@q@qq ...+>, ...)
|
 mod_delayed_work_on@p(E, <+... Q@q@qq ...+>, ...)
|
 queue_rcu_work@p(<+... Q@q@qq ...+>, ...)
|
 enable_and_queue_work@p(<+... Q@q@qq ...+>, ...)
|
 flush_workqueue@p(<+... Q@q@qq ...+>)
|
 __flush_workqueue@p(<+... Q@q@qq ...+>)
|
 drain_workqueue@p(<+... Q@q@qq ...+>)
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
