// SPDX-License-Identifier: GPL-2.0
/* max-active-over-limit on v7.3 (WQ_MAX_ACTIVE 2048, up to --max-cpus 512): CPU counts that can
 * go over it through fields, locals, macros and wrappers; caps that keep them under it. */
#include <linux/workqueue.h>

#define BLK_DEF_NR_QUEUES	1
#define BLK_DEF_QUEUE_DEPTH	128
#define BLK_PER_CPU		16

struct blk_options {
	unsigned int nr_queues;
	unsigned int queue_depth;
};

struct blk_dev {
	struct workqueue_struct *wq;
	unsigned int nr_hw;
};

static int blk_parse(struct blk_options *opts, unsigned int token, int opt)
{
	opts->nr_queues = BLK_DEF_NR_QUEUES;
	opts->queue_depth = BLK_DEF_QUEUE_DEPTH;
	switch (opt) {
	case 1:
		opts->nr_queues = min(token, num_online_cpus());
		break;
	case 2:
		opts->queue_depth = token;
		break;
	}
	return 0;
}

static struct workqueue_struct *blk_make(const char *name, int depth)
{
	return alloc_workqueue("blk-%s", WQ_UNBOUND, depth, name);
}

void blk_add(struct blk_dev *dev, struct blk_options *opts)
{
	unsigned int n = num_online_cpus() * 8;
	unsigned int m;

	// ruleid: unbound-max-active-cpu-count, max-active-over-limit
	dev->wq = alloc_workqueue("blk_q", WQ_UNBOUND,
				  min_t(int, opts->nr_queues * opts->queue_depth, WQ_MAX_ACTIVE));
	// ruleid: unbound-max-active-cpu-count, max-active-over-limit
	dev->wq = alloc_workqueue("blk_local", WQ_UNBOUND,
				  min_t(int, n, WQ_MAX_ACTIVE));
	// ruleid: percpu-max-active-cpu-count, max-active-over-limit
	dev->wq = alloc_workqueue("blk_possible", WQ_PERCPU,
				  min_t(int, num_possible_cpus() * BLK_PER_CPU, WQ_MAX_ACTIVE));
	// ruleid: unbound-max-active-cpu-count, max-active-over-limit
	dev->wq = blk_make("wrapped",
			   min_t(int, num_online_cpus() * BLK_PER_CPU, WQ_MAX_ACTIVE));
	// ruleid: unbound-max-active-cpu-count
	// ok: max-active-over-limit
	dev->wq = alloc_workqueue("blk_double", WQ_UNBOUND, 2 * num_online_cpus());
	// ruleid: unbound-max-active-cpu-count
	// ok: max-active-over-limit
	dev->wq = alloc_workqueue("blk_capped", WQ_UNBOUND, min_t(unsigned int, num_online_cpus(), 64) * 16);
	// ruleid: unbound-max-active-cpu-count
	// ok: max-active-over-limit
	dev->wq = alloc_workqueue("blk_clamped", WQ_UNBOUND, min_t(int, num_online_cpus() * 64, WQ_MAX_ACTIVE));
	// ruleid: unbound-max-active-cpu-count
	// ok: max-active-over-limit
	dev->wq = alloc_workqueue("blk_hw", WQ_UNBOUND, dev->nr_hw * num_online_cpus());
	m = num_online_cpus() * 64;
	if (m > 1024)
		m = 1024;
	// ruleid: unbound-max-active-cpu-count
	// ok: max-active-over-limit
	dev->wq = alloc_workqueue("blk_if_cap", WQ_UNBOUND, m);
}

void blk_warn(struct blk_dev *dev)
{
	unsigned int k = num_online_cpus() * 64;

	if (k > 1024)
		pr_warn("many queues\n");
	// ruleid: unbound-max-active-cpu-count, max-active-over-limit
	dev->wq = alloc_workqueue("blk_warn_only", WQ_UNBOUND,
				  min_t(int, k, WQ_MAX_ACTIVE));
}

int blk_refuse(struct blk_dev *dev)
{
	unsigned int k = num_online_cpus() * 64;

	if (k > 1024)
		return -EINVAL;
	// ruleid: unbound-max-active-cpu-count
	// ok: max-active-over-limit
	dev->wq = alloc_workqueue("blk_refused", WQ_UNBOUND, k);
	return 0;
}
