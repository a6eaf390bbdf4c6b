// SPDX-License-Identifier: GPL-2.0
/* Works that wait for themselves, and the near misses that do not. */
#include <linux/workqueue.h>

struct sf_dev {
	struct workqueue_struct *wq, *aux;
	struct work_struct reset, other, event, stop;
	struct delayed_work poll;
	bool resetting;
	bool broken;
};

static void sf_teardown(struct sf_dev *d)
{
	// ruleid: self-flush-deadlock
	destroy_workqueue(d->wq);
}

static void sf_quiesce(struct sf_dev *d)
{
	// ok: self-flush-deadlock
	flush_workqueue(d->aux);
	// ok: self-flush-deadlock
	flush_work(&d->other);
	// ok: self-flush-deadlock
	cancel_work(&d->reset);
	// ok: self-flush-deadlock
	cancel_delayed_work(&d->poll);
	// ruleid: self-flush-deadlock
	flush_workqueue(d->wq);
}

static void sf_stop(struct sf_dev *d, bool from_work)
{
	if (!from_work)
		// ok: self-flush-deadlock
		cancel_work_sync(&d->reset);
	if (current_work() != &d->reset)
		// ok: self-flush-deadlock
		cancel_work_sync(&d->reset);
	if (!d->resetting)
		// ok: self-flush-deadlock
		cancel_work_sync(&d->reset);
}

static void sf_reset_fn(struct work_struct *work)
{
	struct sf_dev *d = container_of(work, struct sf_dev, reset);

	d->resetting = true;
	sf_stop(d, true);
	sf_quiesce(d);
	if (d->broken) {
		BUG();
		// ok: self-flush-deadlock
		cancel_work_sync(&d->reset);
	}
	if (d->broken)
		sf_teardown(d);
}

static void sf_other_fn(struct work_struct *work)
{
}

static void sf_poll_fn(struct work_struct *work)
{
	struct sf_dev *d = container_of(to_delayed_work(work), struct sf_dev, poll);

	if (d->broken)
		// ruleid: self-flush-deadlock
		cancel_delayed_work_sync(to_delayed_work(work));
}

static void sf_event_fn(struct work_struct *work)
{
	struct sf_dev *d = container_of(work, struct sf_dev, event);

	// ruleid: self-flush-deadlock
	disable_work_sync(&d->event);
}

static void sf_release(struct sf_dev *d)
{
	struct workqueue_struct *wq = d->aux;

	wq = d->wq;
	d->wq = NULL;
	// ruleid: self-flush-deadlock
	destroy_workqueue(wq);
}

static void sf_stop_fn(struct work_struct *work)
{
	struct sf_dev *d = container_of(work, struct sf_dev, stop);

	sf_release(d);
}

static void sf_global_fn(struct work_struct *work);
static DECLARE_WORK(sf_global_work, sf_global_fn);

static void sf_global_fn(struct work_struct *work)
{
	// ruleid: self-flush-deadlock
	flush_work(&sf_global_work);
}

int sf_probe(struct sf_dev *d)
{
	d->wq = alloc_workqueue("sf", WQ_UNBOUND, 0);
	d->aux = alloc_workqueue("sf-aux", WQ_UNBOUND, 0);
	INIT_WORK(&d->reset, sf_reset_fn);
	INIT_WORK(&d->other, sf_other_fn);
	INIT_WORK(&d->event, sf_event_fn);
	INIT_WORK(&d->stop, sf_stop_fn);
	INIT_DELAYED_WORK(&d->poll, sf_poll_fn);
	queue_work(d->wq, &d->reset);
	queue_work(d->aux, &d->other);
	queue_work(d->wq, &d->stop);
	schedule_work(&d->event);
	schedule_delayed_work(&d->poll, HZ);
	schedule_work(&sf_global_work);
	return 0;
}

void sf_remove(struct sf_dev *d)
{
	sf_stop(d, false);
	cancel_work_sync(&d->other);
	flush_work(&d->event);
	destroy_workqueue(d->aux);
	destroy_workqueue(d->wq);
}

/* Works that only seem to wait for themselves: a bit the path knows is set, a label only
 * the ways that kept it reach, and a queue allocated again before it is destroyed. */

#define SP_RESET 0

struct sp_dev {
	struct workqueue_struct *wq;
	struct work_struct work, reset;
	unsigned long state;
	int broken;
};

static void sp_deinit(struct sp_dev *d)
{
	if (!test_bit(SP_RESET, &d->state))
		// ok: self-flush-deadlock
		cancel_work_sync(&d->work);
}

static int sp_restart(struct sp_dev *d)
{
	if (d->broken)
		goto err_deinit;
	clear_bit(SP_RESET, &d->state);
	return 0;

err_deinit:
	sp_deinit(d);
	return -1;
}

static void sp_work_fn(struct work_struct *work)
{
	struct sp_dev *d = container_of(work, struct sp_dev, work);

	if (!test_bit(SP_RESET, &d->state))
		return;
	sp_restart(d);
}

static void sp_free_queue(struct sp_dev *d)
{
	// ok: self-flush-deadlock
	destroy_workqueue(d->wq);
}

static int sp_reinit(struct sp_dev *d)
{
	d->wq = alloc_workqueue("sp-new", WQ_UNBOUND, 0);
	if (!d->wq)
		return -1;
	if (d->broken)
		goto err;
	return 0;
err:
	sp_free_queue(d);
	return -1;
}

static void sp_reset_fn(struct work_struct *work)
{
	struct sp_dev *d = container_of(work, struct sp_dev, reset);

	sp_reinit(d);
}

int sp_probe(struct sp_dev *d)
{
	d->wq = alloc_workqueue("sp", WQ_UNBOUND, 0);
	INIT_WORK(&d->work, sp_work_fn);
	INIT_WORK(&d->reset, sp_reset_fn);
	queue_work(d->wq, &d->work);
	queue_work(d->wq, &d->reset);
	return 0;
}

static void sp_close(struct sp_dev *d, bool tx)
{
	// ok: self-flush-deadlock
	if (tx && cancel_work_sync(&d->reset))
		d->broken = 0;
}

static void sp_close_fn(struct work_struct *work)
{
	struct sp_dev *d = container_of(work, struct sp_dev, reset);

	sp_close(d, false);
}

void sp_setup_close(struct sp_dev *d)
{
	INIT_WORK(&d->reset, sp_close_fn);
	schedule_work(&d->reset);
}

#define SP_HARD 1
#define SP_FROM_THREAD 2

static void sp_cleanup(struct sp_dev *d)
{
	// ok: self-flush-deadlock
	cancel_work_sync(&d->work);
}

static int sp_hw_reset(struct sp_dev *d, unsigned int flags)
{
	bool hard, from_thread;

	hard = !!(flags & SP_HARD);
	from_thread = !!(flags & SP_FROM_THREAD);
again:
	if (hard && !from_thread) {
		queue_work(d->wq, &d->reset);
		return 0;
	}
	sp_cleanup(d);
	if (d->broken) {
		hard = true;
		goto again;
	}
	return 0;
}

static void sp_beat_fn(struct work_struct *work)
{
	struct sp_dev *d = container_of(work, struct sp_dev, work);

	sp_hw_reset(d, SP_HARD);
}

void sp_setup_beat(struct sp_dev *d)
{
	INIT_WORK(&d->work, sp_beat_fn);
	schedule_work(&d->work);
}

/* A teardown reached only when a reference count drops to zero: the work holds a reference
 * to the object while it runs, so that path is not its own. */
struct sr_dev {
	struct workqueue_struct *wq;
	struct work_struct recv;
	refcount_t refs;
	struct kref kref;
	atomic_t users;
};

static void sr_remove(struct sr_dev *d)
{
	// ok: self-flush-deadlock
	destroy_workqueue(d->wq);
}

static void sr_put(struct sr_dev *d)
{
	if (!refcount_dec_and_test(&d->refs))
		return;
	sr_remove(d);
}

static void sr_release(struct sr_dev *d)
{
	if (atomic_dec_and_test(&d->users))
		sr_remove(d);
}

static void sr_recv_fn(struct work_struct *work)
{
	struct sr_dev *d = container_of(work, struct sr_dev, recv);

	sr_put(d);
	sr_release(d);
}

int sr_probe(struct sr_dev *d)
{
	d->wq = alloc_workqueue("sr", WQ_UNBOUND, 0);
	INIT_WORK(&d->recv, sr_recv_fn);
	queue_work(d->wq, &d->recv);
	return 0;
}

/* A freezable queue's work does not run while the system is suspended: a wait guarded by the
 * device's suspended state is not on its path; the same guard on any other queue is. */
struct sz_dev {
	struct workqueue_struct *wq;
	struct work_struct restart, poll;
	bool suspended;
};

static void sz_reconfig(struct sz_dev *d, struct work_struct *which)
{
	bool suspended = d->suspended;

	if (suspended && which == &d->restart)
		// ok: self-flush-deadlock
		cancel_work_sync(&d->restart);
	if (d->suspended)
		// ruleid: self-flush-deadlock
		cancel_work_sync(&d->poll);
}

static void sz_restart_fn(struct work_struct *work)
{
	struct sz_dev *d = container_of(work, struct sz_dev, restart);

	sz_reconfig(d, work);
}

static void sz_poll_fn(struct work_struct *work)
{
	struct sz_dev *d = container_of(work, struct sz_dev, poll);

	sz_reconfig(d, work);
}

void sz_start(struct sz_dev *d)
{
	INIT_WORK(&d->restart, sz_restart_fn);
	INIT_WORK(&d->poll, sz_poll_fn);
	queue_work(system_freezable_wq, &d->restart);
	d->wq = alloc_workqueue("sz", WQ_UNBOUND, 0);
	queue_work(d->wq, &d->poll);
}

/* What every call queueing the work leaves set holds where the work starts: a bit cleared
 * before the only queue_work() keeps the guarded cancel off the work's path; where another
 * call queues it without clearing the bit, the cancel is on it. */
#define SQ_UP 0
struct sq_dev {
	struct workqueue_struct *wq;
	struct delayed_work reset, poll;
	unsigned long flags;
};

static void sq_down(struct sq_dev *d)
{
	if (test_bit(SQ_UP, &d->flags))
		// ok: self-flush-deadlock
		cancel_delayed_work_sync(&d->reset);
	if (test_bit(SQ_UP, &d->flags))
		// ruleid: self-flush-deadlock
		cancel_delayed_work_sync(&d->poll);
}

static void sq_reset_fn(struct work_struct *work)
{
	struct sq_dev *d = container_of(work, struct sq_dev, reset.work);

	sq_down(d);
}

static void sq_poll_fn(struct work_struct *work)
{
	struct sq_dev *d = container_of(work, struct sq_dev, poll.work);

	sq_down(d);
}

void sq_error(struct sq_dev *d)
{
	clear_bit(SQ_UP, &d->flags);
	queue_delayed_work(d->wq, &d->reset, 0);
	clear_bit(SQ_UP, &d->flags);
	queue_delayed_work(d->wq, &d->poll, 0);
}

void sq_kick(struct sq_dev *d)
{
	queue_delayed_work(d->wq, &d->poll, HZ);
}

int sq_probe(struct sq_dev *d)
{
	d->wq = alloc_workqueue("sq", WQ_UNBOUND, 0);
	INIT_DELAYED_WORK(&d->reset, sq_reset_fn);
	INIT_DELAYED_WORK(&d->poll, sq_poll_fn);
	return 0;
}

/* A state the teardown stores only after it waited for the work, and that every call
 * queueing the work stores anew before it: the work never sees it, and its own cancel under
 * that state is dead code. Where another function stores the same value without waiting,
 * the work can see it. */
struct st_dev {
	struct workqueue_struct *wq;
	struct delayed_work tick, poll;
	atomic_t state;
	int mode;
};

static void st_tick_fn(struct work_struct *work)
{
	struct st_dev *d = container_of(to_delayed_work(work), struct st_dev, tick);

	if (!atomic_read(&d->state)) {
		// ok: self-flush-deadlock
		cancel_delayed_work_sync(&d->tick);
		return;
	}
	queue_delayed_work(d->wq, &d->tick, HZ);
}

static void st_poll_fn(struct work_struct *work)
{
	struct st_dev *d = container_of(to_delayed_work(work), struct st_dev, poll);

	if (d->mode == 0)
		// ruleid: self-flush-deadlock
		cancel_delayed_work_sync(&d->poll);
}

int st_run(struct st_dev *d, int state)
{
	atomic_set(&d->state, state);
	queue_delayed_work(d->wq, &d->tick, HZ);
	d->mode = state;
	queue_delayed_work(d->wq, &d->poll, HZ);
	return 0;
}

void st_halt(struct st_dev *d)
{
	cancel_delayed_work_sync(&d->tick);
	atomic_set(&d->state, 0);
	cancel_delayed_work_sync(&d->poll);
	d->mode = 0;
}

void st_pause(struct st_dev *d)
{
	d->mode = 0;
}

int st_probe(struct st_dev *d)
{
	d->wq = alloc_workqueue("st", WQ_UNBOUND, 0);
	INIT_DELAYED_WORK(&d->tick, st_tick_fn);
	INIT_DELAYED_WORK(&d->poll, st_poll_fn);
	return 0;
}

/* One item bound to two functions in turn: the loader runs on the driver's queue and hands the
 * item, bound anew, to a system queue, where the completion may destroy the driver's queue. */
struct ld_work {
	struct workqueue_struct *wq;
	struct work_struct work;
};

static void ld_done_fn(struct work_struct *data)
{
	struct ld_work *w = container_of(data, struct ld_work, work);

	// ok: self-flush-deadlock
	destroy_workqueue(w->wq);
}

static void ld_load_fn(struct work_struct *data)
{
	struct ld_work *w = container_of(data, struct ld_work, work);

	INIT_WORK(&w->work, ld_done_fn);
	queue_work(system_long_wq, &w->work);
}

int ld_start(struct ld_work *w)
{
	w->wq = alloc_workqueue("ld", WQ_UNBOUND, 0);
	INIT_WORK(&w->work, ld_load_fn);
	queue_work(w->wq, &w->work);
	return 0;
}

/* A queue named by a format whose argument a field holds: named as the kernel prints it. */
struct nm_dev {
	struct workqueue_struct *wq;
	struct work_struct scan;
	const char *name;
	bool stop;
};

static void nm_scan_fn(struct work_struct *work)
{
	struct nm_dev *d = container_of(work, struct nm_dev, scan);

	if (d->stop)
		// ruleid: self-flush-deadlock
		cancel_work_sync(&d->scan);
}

int nm_start(struct nm_dev *d)
{
	d->wq = alloc_ordered_workqueue("%s", 0, d->name);
	INIT_WORK(&d->scan, nm_scan_fn);
	queue_work(d->wq, &d->scan);
	return 0;
}
