/* SPDX-License-Identifier: GPL-2.0 */
struct blkfs_workqueue;

struct blkfs_fs_info {
	unsigned int thread_pool_size;
	struct blkfs_workqueue *workers;
	struct workqueue_struct *endio_workers;
};

struct blkfs_workqueue *blkfs_alloc_workqueue(struct blkfs_fs_info *fs_info,
					      const char *name, unsigned int flags,
					      int limit_active, int thresh);
