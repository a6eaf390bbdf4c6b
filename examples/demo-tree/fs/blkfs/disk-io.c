// SPDX-License-Identifier: GPL-2.0
/* The limit travels: a field set in another file (super.c), read here, through a wrapper. */
#include <linux/workqueue.h>
#include "ctree.h"

static int blkfs_init_workqueues(struct blkfs_fs_info *fs_info)
{
	u32 max_active = fs_info->thread_pool_size;
	unsigned int flags = WQ_MEM_RECLAIM | WQ_FREEZABLE | WQ_UNBOUND;

	fs_info->workers =
		// ruleid: unbound-max-active-cpu-count
		blkfs_alloc_workqueue(fs_info, "worker", flags, max_active, 16);
	fs_info->endio_workers =
		// ruleid: unbound-max-active-cpu-count
		alloc_workqueue("blkfs-endio", flags, max_active);
	return 0;
}
