// SPDX-License-Identifier: GPL-2.0
/* A flush of system_wq meant to wait for work schedule_work() queued, on a queue it is not. */
#include <linux/workqueue.h>

struct fqm {
	struct work_struct work;
	struct workqueue_struct *wq;
};

void fqm_stop(struct fqm *f)
{
	schedule_work(&f->work);
	// ruleid: flush-queue-mismatch, deprecated-system-workqueue
	flush_workqueue(system_percpu_wq);
	// ok: flush-queue-mismatch
	flush_workqueue(system_percpu_wq);
	// ok: flush-queue-mismatch
	flush_workqueue(f->wq);
}
