// SPDX-License-Identifier: GPL-2.0
/* A per-CPU queue's max_active from a CPU count: CPU count squared items in flight. */
#include <linux/workqueue.h>

struct pcc {
	struct workqueue_struct *wq;
};

int pcc_init(struct pcc *p)
{
	unsigned int max = nr_cpu_ids;

	// ruleid: percpu-max-active-cpu-count
	p->wq = alloc_workqueue("pcc_direct", WQ_PERCPU, num_online_cpus());
	// ruleid: percpu-max-active-cpu-count
	p->wq = alloc_workqueue("pcc_local", WQ_PERCPU | WQ_HIGHPRI, max);
	// ok: percpu-max-active-cpu-count
	p->wq = alloc_workqueue("pcc_fixed", WQ_PERCPU, 16);
	/* An unbound queue is the other rule's. */
	// ok: percpu-max-active-cpu-count
	// ruleid: unbound-max-active-cpu-count
	p->wq = alloc_workqueue("pcc_unbound", WQ_UNBOUND, num_online_cpus());
	return 0;
}
