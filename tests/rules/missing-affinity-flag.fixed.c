// SPDX-License-Identifier: GPL-2.0
/* alloc_workqueue() whose flags name neither WQ_PERCPU nor WQ_UNBOUND. */
#include <linux/workqueue.h>

struct maf {
	struct workqueue_struct *wq;
};

int maf_init(struct maf *m, bool unbound)
{
	unsigned int flags = WQ_MEM_RECLAIM;

	// ruleid: missing-affinity-flag
	m->wq = alloc_workqueue("maf_zero", WQ_PERCPU, 0);
	// ruleid: missing-affinity-flag
	m->wq = alloc_workqueue("maf_reclaim",
				WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_PERCPU, 1);
	// ruleid: missing-affinity-flag
	m->wq = alloc_workqueue("maf_local", flags | WQ_PERCPU, 0);
	// ok: missing-affinity-flag
	m->wq = alloc_workqueue("maf_percpu", WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	// ok: missing-affinity-flag
	m->wq = alloc_workqueue("maf_unbound", WQ_UNBOUND, 0);
	/* An ordered queue is unbound by the call itself. */
	// ok: missing-affinity-flag
	m->wq = alloc_ordered_workqueue("maf_ordered", WQ_MEM_RECLAIM);
	return 0;
}
