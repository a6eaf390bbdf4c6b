// SPDX-License-Identifier: GPL-2.0
/* system_wq and system_unbound_wq passed to the calls that take a queue. */
#include <linux/workqueue.h>

struct dsw {
	struct work_struct work;
	struct delayed_work dwork;
};

void dsw_kick(struct dsw *d)
{
	// ruleid: deprecated-system-workqueue
	queue_work(system_percpu_wq, &d->work);
	// ruleid: deprecated-system-workqueue
	mod_delayed_work(system_dfl_wq, &d->dwork, HZ);
	// ok: deprecated-system-workqueue
	queue_work(system_percpu_wq, &d->work);
	// ok: deprecated-system-workqueue
	queue_delayed_work(system_dfl_wq, &d->dwork, HZ);
	// ok: deprecated-system-workqueue
	schedule_work(&d->work);
}
