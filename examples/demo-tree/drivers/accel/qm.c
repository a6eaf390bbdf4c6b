// SPDX-License-Identifier: GPL-2.0
/* Flags through a ternary and a macro; a module parameter; #ifdef twins. */
#include <linux/module.h>
#include <linux/workqueue.h>

#define QM_WQ_FLAGS	(WQ_HIGHPRI | WQ_MEM_RECLAIM | WQ_UNBOUND)
#define QM_MAX_WORKERS	(8 * num_possible_cpus())

static int qm_threads = 4;
module_param(qm_threads, int, 0444);

struct qm {
	struct workqueue_struct *wq;
	struct workqueue_struct *poll_wq;
	bool polling;
};

int qm_init_wq(struct qm *qm, const char *name)
{
	unsigned int flags = qm->polling ? WQ_UNBOUND : QM_WQ_FLAGS;

	// ruleid: unbound-max-active-cpu-count, max-active-over-limit
	qm->wq = alloc_workqueue("%s", flags, QM_MAX_WORKERS, name);
#ifdef CONFIG_QM_POLL
	// ruleid: unbound-max-active-cpu-count
	qm->poll_wq = alloc_workqueue("qm_poll", WQ_UNBOUND, nr_cpu_ids);
#else
	// ruleid: unbound-max-active-cpu-count
	qm->poll_wq = alloc_workqueue("qm_poll", WQ_UNBOUND | WQ_HIGHPRI, nr_cpu_ids);
#endif
	// ok: unbound-max-active-cpu-count
	qm->wq = alloc_workqueue("qm_tunable", WQ_UNBOUND, qm_threads);
	return 0;
}

int qm_init_big(struct qm *qm)
{
	// ruleid: max-active-over-limit
	qm->wq = alloc_workqueue("qm_big", WQ_UNBOUND, 4096);
	return 0;
}

/* A module parameter whose default is a CPU count: reported, and said to be tunable. */
static int qm_poll_threads = NR_CPUS;
module_param(qm_poll_threads, int, 0444);

int qm_init_poll(struct qm *qm)
{
	// ruleid: unbound-max-active-cpu-count, max-active-over-limit
	qm->poll_wq = alloc_workqueue("qm_poll_tunable", WQ_UNBOUND, qm_poll_threads);
	return 0;
}
