// SPDX-License-Identifier: GPL-2.0
/* Legacy constructors, max_active 1 on an unbound queue, missing affinity flags. */
#include <linux/workqueue.h>

static struct workqueue_struct *a, *b, *c, *d, *e, *f;

void legacy_init(void)
{
	// ruleid: legacy-create-workqueue
	a = create_singlethread_workqueue("legacy_single");
	// ruleid: legacy-create-workqueue
	b = create_workqueue("legacy_multi");
	// ruleid: legacy-create-workqueue, unbound-max-active-one
	c = create_freezable_workqueue("legacy_freeze");
	// ruleid: unbound-max-active-one
	d = alloc_workqueue("one_at_a_time", WQ_UNBOUND | WQ_MEM_RECLAIM, 1);
	// ok: unbound-max-active-one
	e = alloc_ordered_workqueue("ordered", WQ_MEM_RECLAIM);
	// ruleid: missing-affinity-flag
	f = alloc_workqueue("no_affinity", WQ_MEM_RECLAIM, 0);
	// ok: missing-affinity-flag
	f = alloc_workqueue("percpu", WQ_MEM_RECLAIM | WQ_PERCPU, 0);
	/* wqlint: ignore[missing-affinity-flag] */
	f = alloc_workqueue("suppressed", 0, 0);
}
