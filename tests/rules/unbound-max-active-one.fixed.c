// SPDX-License-Identifier: GPL-2.0
/* Flags on continuation lines (which look like enumerators to a line scan) and WQ_SYSFS. */
#include <linux/workqueue.h>

struct host {
	struct workqueue_struct *work_q;
	int host_no;
};

void host_init(struct host *shost)
{
	// ruleid: unbound-max-active-one
	shost->work_q = alloc_ordered_workqueue("scsi_wq_%d",
						WQ_SYSFS | WQ_MEM_RECLAIM,
						shost->host_no);
	// ruleid: unbound-max-active-one
	shost->work_q = alloc_ordered_workqueue("scsi_tmf_%d",
						WQ_MEM_RECLAIM | WQ_SYSFS,
						shost->host_no);
}
