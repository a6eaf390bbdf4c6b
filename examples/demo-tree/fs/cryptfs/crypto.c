// SPDX-License-Identifier: GPL-2.0
/* A filesystem crypto layer: the direct cases, one call spread over lines. */
#include <linux/workqueue.h>

static struct workqueue_struct *cryptfs_read_workqueue;
static struct workqueue_struct *cryptfs_verify_workqueue;

int cryptfs_init(void)
{
	// ruleid: unbound-max-active-cpu-count
	cryptfs_read_workqueue = alloc_workqueue("cryptfs_read_queue",
						 WQ_UNBOUND | WQ_HIGHPRI,
						 num_online_cpus());
	if (!cryptfs_read_workqueue)
		return -ENOMEM;
	// ruleid: percpu-max-active-cpu-count, missing-affinity-flag
	cryptfs_verify_workqueue = alloc_workqueue("cryptfs_verify_queue",
						   WQ_HIGHPRI,
						   num_online_cpus());
	return 0;
}
