/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The workqueue API as wqlint assumes it when the scanned tree has no
 * include/linux/workqueue.h (a directory of loose files rather than a kernel
 * tree): the flag values and allocation macros of v6.12, written out as data
 * so that flags and the create_*() and alloc_ordered_*() macros resolve the
 * same way they do inside a kernel tree.
 */
enum wq_flags {
	WQ_BH			= 1 << 0,
	WQ_UNBOUND		= 1 << 1,
	WQ_FREEZABLE		= 1 << 2,
	WQ_MEM_RECLAIM		= 1 << 3,
	WQ_HIGHPRI		= 1 << 4,
	WQ_CPU_INTENSIVE	= 1 << 5,
	WQ_SYSFS		= 1 << 6,
	WQ_POWER_EFFICIENT	= 1 << 7,
	WQ_PERCPU		= 1 << 8,
	__WQ_DESTROYING		= 1 << 15,
	__WQ_DRAINING		= 1 << 16,
	__WQ_ORDERED		= 1 << 17,
	__WQ_LEGACY		= 1 << 18,
};

enum wq_consts {
	WQ_MAX_ACTIVE		= 512,
	WQ_UNBOUND_MAX_ACTIVE	= WQ_MAX_ACTIVE,
	WQ_DFL_ACTIVE		= WQ_MAX_ACTIVE / 2,
	WQ_DFL_MIN_ACTIVE	= 8,
};

struct workqueue_struct *
alloc_workqueue(const char *fmt, unsigned int flags, int max_active, ...);

#define alloc_ordered_workqueue(fmt, flags, args...)			\
	alloc_workqueue(fmt, WQ_UNBOUND | __WQ_ORDERED | (flags), 1, ##args)

#define create_workqueue(name)						\
	alloc_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, 1, (name))
#define create_freezable_workqueue(name)				\
	alloc_workqueue("%s", __WQ_LEGACY | WQ_FREEZABLE | WQ_UNBOUND |	\
			WQ_MEM_RECLAIM, 1, (name))
#define create_singlethread_workqueue(name)				\
	alloc_ordered_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, name)
