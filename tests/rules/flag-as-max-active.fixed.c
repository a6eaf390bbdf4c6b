// SPDX-License-Identifier: GPL-2.0
/* flag-as-max-active on v7.3: a WQ_* flag in the max_active argument, written at the call,
 * through a macro, a local and a wrapper's parameter; limits that are limits are not. */
#include <linux/workqueue.h>

#define GGTT_WQ_FLAGS	WQ_MEM_RECLAIM
#define GGTT_WQ_DEPTH	8

struct ggtt {
	struct workqueue_struct *wq;
};

static struct workqueue_struct *ggtt_make(const char *name, unsigned int flags, int max)
{
	return alloc_workqueue("%s", flags, max, name);
}

int ggtt_init(struct ggtt *ggtt)
{
	int limit = WQ_UNBOUND;

	// ruleid: flag-as-max-active, missing-affinity-flag
	ggtt->wq = alloc_workqueue("xe-ggtt-wq", WQ_MEM_RECLAIM, 0);
	// ruleid: flag-as-max-active
	ggtt->wq = alloc_workqueue("ggtt-macro", WQ_PERCPU, GGTT_WQ_FLAGS);
	// ruleid: flag-as-max-active
	ggtt->wq = alloc_workqueue("ggtt-local", WQ_PERCPU, limit);
	// ruleid: flag-as-max-active, missing-affinity-flag
	ggtt->wq = ggtt_make("ggtt-wrapped", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	// ok: flag-as-max-active
	ggtt->wq = alloc_workqueue("ggtt-fixed", WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	// ok: flag-as-max-active
	ggtt->wq = alloc_workqueue("ggtt-depth", WQ_PERCPU, GGTT_WQ_DEPTH);
	// ok: flag-as-max-active
	ggtt->wq = alloc_workqueue("ggtt-max", WQ_UNBOUND, WQ_MAX_ACTIVE);
	// ok: flag-as-max-active
	ggtt->wq = alloc_workqueue("ggtt-dfl", WQ_UNBOUND, WQ_UNBOUND_MAX_ACTIVE);
	// ok: flag-as-max-active
	ggtt->wq = alloc_ordered_workqueue("ggtt-ordered", WQ_MEM_RECLAIM);
	return 0;
}
