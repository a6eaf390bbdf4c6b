// SPDX-License-Identifier: GPL-2.0
/* Work on WQ_MEM_RECLAIM queues that waits for other queues (check_flush_dependency()). */
#include <linux/workqueue.h>

struct rc_ops {
	int (*sync)(struct rc_dev *rc);
};

struct rc_dev {
	struct workqueue_struct *wq;		/* WQ_MEM_RECLAIM */
	struct workqueue_struct *aux;		/* no rescuer */
	struct workqueue_struct *spare;		/* WQ_MEM_RECLAIM as well */
	const struct rc_ops *ops;
	struct work_struct reset;
	struct work_struct teardown;
	struct work_struct sync_work;
	struct work_struct spare_work;
	struct work_struct self_work;
	struct work_struct cancel_work;
	struct work_struct aux_work;
	struct work_struct event;
	struct delayed_work poll;
};

static void rc_aux_fn(struct work_struct *w)
{
}

static void rc_event_fn(struct work_struct *w)
{
}

/* Two calls below the work function. */
static void rc_quiesce(struct rc_dev *rc)
{
	// ruleid: reclaim-flush-dependency
	flush_workqueue(rc->aux);
}

static void rc_stop(struct rc_dev *rc)
{
	rc_quiesce(rc);
}

static void rc_reset_fn(struct work_struct *w)
{
	struct rc_dev *rc = container_of(w, struct rc_dev, reset);

	rc_stop(rc);
}

/* Through a member initialised to a known function. */
static int rc_do_sync(struct rc_dev *rc)
{
	// ruleid: reclaim-flush-dependency
	flush_work(&rc->aux_work);
	return 0;
}

static const struct rc_ops rc_default_ops = {
	.sync = rc_do_sync,
};

static void rc_sync_fn(struct work_struct *w)
{
	struct rc_dev *rc = container_of(w, struct rc_dev, sync_work);

	rc->ops->sync(rc);
}

/* destroy_workqueue() drains the queue first; schedule_work() items are on a system queue. */
static void rc_teardown_fn(struct work_struct *w)
{
	struct rc_dev *rc = container_of(w, struct rc_dev, teardown);

	// ruleid: reclaim-flush-dependency
	flush_work(&rc->event);
	// ok: reclaim-flush-dependency
	cancel_work_sync(&rc->aux_work);
	// ruleid: reclaim-flush-dependency
	destroy_workqueue(rc->aux);
}

/* Waiting for another queue with a rescuer, or for its own queue: nothing to warn about. */
static void rc_spare_fn(struct work_struct *w)
{
	struct rc_dev *rc = container_of(w, struct rc_dev, spare_work);

	// ok: reclaim-flush-dependency
	flush_workqueue(rc->spare);
	// ok: reclaim-flush-dependency
	flush_work(&rc->self_work);
	// ruleid: self-flush-deadlock
	flush_workqueue(rc->wq);
}

/* Work that runs on a queue without WQ_MEM_RECLAIM may wait for anything. */
static void rc_poll_fn(struct work_struct *w)
{
	struct rc_dev *rc = container_of(to_delayed_work(w), struct rc_dev, poll);

	// ruleid: self-flush-deadlock
	flush_workqueue(rc->aux);
}

int rc_probe(struct rc_dev *rc)
{
	rc->wq = alloc_workqueue("rc", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	rc->aux = alloc_workqueue("rc-aux", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	rc->spare = alloc_workqueue("rc-spare", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	rc->ops = &rc_default_ops;
	INIT_WORK(&rc->reset, rc_reset_fn);
	INIT_WORK(&rc->sync_work, rc_sync_fn);
	INIT_WORK(&rc->teardown, rc_teardown_fn);
	INIT_WORK(&rc->spare_work, rc_spare_fn);
	INIT_WORK(&rc->aux_work, rc_aux_fn);
	INIT_WORK(&rc->event, rc_event_fn);
	INIT_DELAYED_WORK(&rc->poll, rc_poll_fn);
	queue_work(rc->wq, &rc->reset);
	queue_work(rc->wq, &rc->sync_work);
	queue_work(rc->wq, &rc->teardown);
	queue_work(rc->wq, &rc->spare_work);
	queue_work(rc->aux, &rc->aux_work);
	queue_delayed_work(rc->aux, &rc->poll, HZ);
	INIT_WORK(&rc->self_work, rc_aux_fn);
	queue_work(rc->wq, &rc->self_work);
	schedule_work(&rc->event);
	return 0;
}

/* A queue from create_workqueue() (__WQ_LEGACY) is exempt as the flusher. */
struct lg_dev {
	struct workqueue_struct *wq;
	struct workqueue_struct *aux;
	struct work_struct work;
};

static void lg_work_fn(struct work_struct *w)
{
	struct lg_dev *lg = container_of(w, struct lg_dev, work);

	// ok: reclaim-flush-dependency
	flush_workqueue(lg->aux);
}

int lg_probe(struct lg_dev *lg)
{
	// ruleid: legacy-create-workqueue
	lg->wq = create_workqueue("lg");
	lg->aux = alloc_workqueue("lg-aux", WQ_UNBOUND, 0);
	INIT_WORK(&lg->work, lg_work_fn);
	queue_work(lg->wq, &lg->work);
	return 0;
}

/* A queue allocated in the function that destroys it on its error exit, before anything was
 * queued on it: __flush_workqueue() returns at "nothing to flush". Once a work is queued on
 * it, the destroy waits for that work. */
struct fr_dev {
	struct workqueue_struct *wq;
	struct workqueue_struct *q, *busy;
	struct work_struct setup, job;
	int err;
};

static void fr_job_fn(struct work_struct *w)
{
}

static int fr_alloc(struct fr_dev *fr)
{
	fr->q = alloc_workqueue("fr-q", WQ_UNBOUND, 0);
	if (!fr->q)
		return -ENOMEM;
	if (fr->err)
		goto fail;
	return 0;
fail:
	// ok: reclaim-flush-dependency
	destroy_workqueue(fr->q);
	return -EINVAL;
}

static int fr_alloc_busy(struct fr_dev *fr)
{
	fr->busy = alloc_workqueue("fr-busy", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!fr->busy)
		return -ENOMEM;
	queue_work(fr->busy, &fr->job);
	if (fr->err)
		goto fail;
	return 0;
fail:
	// ruleid: reclaim-flush-dependency
	destroy_workqueue(fr->busy);
	return -EINVAL;
}

static void fr_setup_fn(struct work_struct *w)
{
	struct fr_dev *fr = container_of(w, struct fr_dev, setup);

	fr_alloc(fr);
	fr_alloc_busy(fr);
}

int fr_probe(struct fr_dev *fr)
{
	fr->wq = alloc_workqueue("fr", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	INIT_WORK(&fr->setup, fr_setup_fn);
	INIT_WORK(&fr->job, fr_job_fn);
	queue_work(fr->wq, &fr->setup);
	return 0;
}

/* A work that destroys the queue it runs on hangs there: a flush after it on its path is
 * never reached. */
struct bl_dev {
	struct workqueue_struct *wq, *aux;
	struct work_struct reset;
};

static void bl_reset_fn(struct work_struct *w)
{
	struct bl_dev *bl = container_of(w, struct bl_dev, reset);

	// ruleid: self-flush-deadlock
	destroy_workqueue(bl->wq);
	// ok: reclaim-flush-dependency
	flush_workqueue(bl->aux);
}

int bl_probe(struct bl_dev *bl)
{
	bl->wq = alloc_workqueue("bl", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	bl->aux = alloc_workqueue("bl-aux", WQ_UNBOUND, 0);
	INIT_WORK(&bl->reset, bl_reset_fn);
	queue_work(bl->wq, &bl->reset);
	return 0;
}

/* One item bound to two functions in turn: the one queued on the reclaim queue is the one it
 * was bound to just before, the other runs only from the system queue. */
struct rb_dev {
	struct workqueue_struct *wq, *aux;
	struct work_struct work;
};

static void rb_io_fn(struct work_struct *w)
{
}

static void rb_sync_fn(struct work_struct *w)
{
	struct rb_dev *rb = container_of(w, struct rb_dev, work);

	// ok: reclaim-flush-dependency
	flush_workqueue(rb->aux);
}

void rb_io(struct rb_dev *rb)
{
	INIT_WORK(&rb->work, rb_io_fn);
	queue_work(rb->wq, &rb->work);
}

void rb_sync(struct rb_dev *rb)
{
	INIT_WORK(&rb->work, rb_sync_fn);
	schedule_work(&rb->work);
}

int rb_probe(struct rb_dev *rb)
{
	rb->wq = alloc_workqueue("rb", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	rb->aux = alloc_workqueue("rb-aux", WQ_UNBOUND, 0);

/* Two works, each on a WQ_MEM_RECLAIM queue of its own, reach one flush: one finding there,
 * naming both (the shortest chain shown), the queue named as the kernel names it (gr-aux7). */
struct gr_dev {
	struct workqueue_struct *wq;
	struct workqueue_struct *evq;
	struct workqueue_struct *aux;
	struct work_struct add;
	struct work_struct event;
};

static void gr_quiesce(struct gr_dev *gr)
{
	// ruleid: reclaim-flush-dependency
	flush_workqueue(gr->aux);
}

static void gr_add_fn(struct work_struct *w)
{
	struct gr_dev *gr = container_of(w, struct gr_dev, add);

	gr_quiesce(gr);
}

static void gr_stop(struct gr_dev *gr)
{
	gr_quiesce(gr);
}

static void gr_event_fn(struct work_struct *w)
{
	struct gr_dev *gr = container_of(w, struct gr_dev, event);

	gr_stop(gr);
}

int gr_probe(struct gr_dev *gr)
{
	gr->wq = alloc_workqueue("gr", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	gr->evq = alloc_workqueue("%s", WQ_MEM_RECLAIM | WQ_UNBOUND, 0, "gr_events");
	gr->aux = alloc_workqueue("gr-aux%d", WQ_UNBOUND | WQ_MEM_RECLAIM, 0,
				  7);
	INIT_WORK(&gr->event, gr_event_fn);
	INIT_WORK(&gr->add, gr_add_fn);
	queue_work(gr->evq, &gr->event);
	queue_work(gr->wq, &gr->add);
	return 0;
}
