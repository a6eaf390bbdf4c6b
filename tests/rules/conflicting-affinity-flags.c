// SPDX-License-Identifier: GPL-2.0
/* WQ_PERCPU on a queue that is unbound anyway. */
#include <linux/workqueue.h>

struct caf {
	struct workqueue_struct *wq;
};

int caf_init(struct caf *c)
{
	// ruleid: conflicting-affinity-flags
	c->wq = alloc_workqueue("caf_both", WQ_UNBOUND | WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	// ruleid: conflicting-affinity-flags
	c->wq = alloc_ordered_workqueue("caf_ordered", WQ_PERCPU);
	// ok: conflicting-affinity-flags
	c->wq = alloc_workqueue("caf_unbound", WQ_UNBOUND, 0);
	// ok: conflicting-affinity-flags
	c->wq = alloc_workqueue("caf_percpu", WQ_PERCPU, 0);
	// ok: conflicting-affinity-flags
	c->wq = alloc_ordered_workqueue("caf_ordered_plain", WQ_MEM_RECLAIM);
	return 0;
}
