// SPDX-License-Identifier: GPL-2.0
/* The deprecated create_*workqueue() macros. */
#include <linux/workqueue.h>

struct lcw {
	struct workqueue_struct *wq;
};

int lcw_init(struct lcw *l, const char *name)
{
	// ruleid: legacy-create-workqueue
	l->wq = alloc_workqueue("lcw", WQ_MEM_RECLAIM | WQ_PERCPU, 1);
	// ruleid: legacy-create-workqueue
	l->wq = alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, name);
	// ok: legacy-create-workqueue
	l->wq = alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, name);
	// ok: legacy-create-workqueue
	l->wq = alloc_workqueue("lcw_percpu", WQ_MEM_RECLAIM | WQ_PERCPU, 1);
	return 0;
}
