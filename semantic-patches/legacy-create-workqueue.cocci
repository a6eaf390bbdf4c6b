// SPDX-License-Identifier: GPL-2.0-only
///
/// Replace the deprecated create_*workqueue() with their alloc_*workqueue()
///
/// create_workqueue(), create_freezable_workqueue() and
/// create_singlethread_workqueue() are deprecated wrappers that also set the
/// internal __WQ_LEGACY flag.  The patch mode writes out what each expands
/// to, without __WQ_LEGACY, as upstream conversions do; the flags then say
/// what the workqueue needs and can be trimmed by the maintainer.
///
//# The patch mode adds WQ_PERCPU, which only trees from v6.17 on (and
//# stable trees that took it) define.  create_freezable_workqueue() becomes
//# an unbound workqueue with max_active 1, which is not ordered since v6.9:
//# use alloc_ordered_workqueue() where ordering is needed.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// Options: --no-includes
// Requires: 1.1.1
// Keywords: create_workqueue, create_singlethread_workqueue
//

virtual patch
virtual context
virtual org
virtual report

// The calls by name (one match of every function), then by form.
@c depends on !patch@
iterator name scoped_guard;
identifier fn = {create_workqueue, create_freezable_workqueue,
	create_singlethread_workqueue};
position p;
@@

 fn@p(...)

@r@
expression name;
position c.p, pr;
@@

(
 create_workqueue@p@pr(name)
|
 create_freezable_workqueue@p@pr(name)
|
 create_singlethread_workqueue@p@pr(name)
)

@depends on patch@
expression name;
@@

(
- create_workqueue(name)
+ alloc_workqueue("%s", WQ_MEM_RECLAIM | WQ_PERCPU, 1, name)
|
- create_freezable_workqueue(name)
+ alloc_workqueue("%s", WQ_FREEZABLE | WQ_UNBOUND | WQ_MEM_RECLAIM, 1, name)
|
- create_singlethread_workqueue(name)
+ alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, name)
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
	"create_*workqueue() is deprecated: call alloc_workqueue() or alloc_ordered_workqueue() with explicit flags")

@script:python depends on report@
p << r.pr;
@@
coccilib.report.print_report(p[0],
	"create_*workqueue() is deprecated: call alloc_workqueue() or alloc_ordered_workqueue() with explicit flags")
