// SPDX-License-Identifier: GPL-2.0
/* An unbound queue's max_active from a CPU count, written at the call or through a local. */
#include <linux/workqueue.h>

struct ucc {
	struct workqueue_struct *wq;
};

int ucc_init(struct ucc *u)
{
	int n = min(num_possible_cpus(), 8);

	// ruleid: unbound-max-active-cpu-count
	u->wq = alloc_workqueue("ucc_direct", WQ_UNBOUND, num_online_cpus());
	// ruleid: unbound-max-active-cpu-count
	u->wq = alloc_workqueue("ucc_local", WQ_UNBOUND | WQ_MEM_RECLAIM, n);
	/* A fixed limit, or the default. */
	// ok: unbound-max-active-cpu-count
	u->wq = alloc_workqueue("ucc_fixed", WQ_UNBOUND, 4);
	// ok: unbound-max-active-cpu-count
	u->wq = alloc_workqueue("ucc_default", WQ_UNBOUND, 0);
	/* A per-CPU queue is the other rule's. */
	// ok: unbound-max-active-cpu-count
	// ruleid: percpu-max-active-cpu-count
	u->wq = alloc_workqueue("ucc_percpu", WQ_PERCPU, num_online_cpus());
	return 0;
}
