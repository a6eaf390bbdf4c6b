// SPDX-License-Identifier: GPL-2.0
/* The workqueue code's internal __WQ_* flags written by a caller. */
#include <linux/workqueue.h>

struct iwf {
	struct workqueue_struct *wq;
};

int iwf_init(struct iwf *i)
{
	// ruleid: internal-workqueue-flag
	i->wq = alloc_workqueue("iwf_ordered", WQ_UNBOUND | __WQ_ORDERED, 1);
	// ruleid: internal-workqueue-flag
	i->wq = alloc_workqueue("iwf_legacy", WQ_PERCPU | WQ_MEM_RECLAIM | __WQ_LEGACY, 1);
	// ok: internal-workqueue-flag
	i->wq = alloc_ordered_workqueue("iwf_plain", WQ_MEM_RECLAIM);
	return 0;
}
