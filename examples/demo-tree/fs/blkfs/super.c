// SPDX-License-Identifier: GPL-2.0
/* Mount-time defaults: the worker pool size is derived from the CPU count. */
#include <linux/cpumask.h>
#include "ctree.h"

static unsigned int blkfs_mount_pool_size;

void blkfs_init_fs_info(struct blkfs_fs_info *fs_info)
{
	fs_info->thread_pool_size = min_t(unsigned long,
					  num_online_cpus() + 2, 8);
}

void blkfs_apply_mount_options(struct blkfs_fs_info *fs_info)
{
	if (blkfs_mount_pool_size)
		fs_info->thread_pool_size = blkfs_mount_pool_size;
}
