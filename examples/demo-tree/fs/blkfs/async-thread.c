// SPDX-License-Identifier: GPL-2.0
/* A wrapper that forwards its limit into alloc_workqueue(). */
#include <linux/workqueue.h>
#include "ctree.h"

struct blkfs_workqueue {
	struct workqueue_struct *normal_wq;
	int current_active;
};

struct blkfs_workqueue *blkfs_alloc_workqueue(struct blkfs_fs_info *fs_info,
					      const char *name, unsigned int flags,
					      int limit_active, int thresh)
{
	struct blkfs_workqueue *ret = kzalloc(sizeof(*ret), GFP_KERNEL);

	if (!ret)
		return NULL;
	if (thresh < 32)
		ret->current_active = limit_active;
	else
		ret->current_active = 1;
	ret->normal_wq = alloc_workqueue("blkfs-%s", flags, ret->current_active,
					 name);
	return ret;
}
