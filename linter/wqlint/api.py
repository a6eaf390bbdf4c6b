"""The one description of the kernel's workqueue API that wqlint relies on.

Everything else reads it: the scanner (which calls allocate a queue, where their flags and
max_active are), `wqlint check` (what is left of them after cpp), the tree facts, the fixer,
the Coccinelle engine (and a test holds the .cocci name lists to it), and the rules (what a
kernel version does with a queue). The scanned tree's own include/linux/workqueue.h always
wins over what is written here: these facts are used to read it, to word the messages, and to
stand in for it (builtin_header()) where no kernel tree is at hand.

Facts carry the upstream commit that made them true; check them in a tree before changing one.
"""
from __future__ import annotations

from dataclasses import dataclass

# The newest version this description has been checked against (Debian's linux-source-7.3):
# what is assumed when neither a tree nor --kernel-version says (mainline first).
NEWEST_VERSION = (7, 3, 0)

Version = tuple  # (major, minor, sublevel)


@dataclass(frozen=True)
class Entry:
    """An allocation entry point: a call that creates a workqueue."""

    name: str
    flags_arg: int  # index of the flags argument
    max_active_arg: int  # index of max_active (-1: fixed by the entry point)
    kind: str  # "function": creates the queue; "macro": expands to another entry point
    public: bool  # written by callers (False: internal or the _noprof half of alloc_hooks())
    since: Version
    commit: str = ""
    adds: tuple = ()  # flags a macro ORs in
    max_active: "int | None" = None  # max_active a macro passes
    legacy: bool = False  # the deprecated create_*workqueue() family
    name_arg: int = 0  # index of the printf format of the queue's name
    args_from: int = -1  # index of the first argument formatted into the name (-1: none, a va_list)


ENTRIES = (
    Entry("alloc_workqueue", 1, 2, "function", True, (2, 6, 36), args_from=3),
    # v6.17 (fda6add92438): alloc_workqueue() became
    # `#define alloc_workqueue(...) alloc_hooks(alloc_workqueue_noprof(__VA_ARGS__))`.
    Entry("alloc_workqueue_noprof", 1, 2, "function", False, (6, 17), "fda6add92438", args_from=3),
    Entry("alloc_workqueue_lockdep_map", 1, 2, "function", True, (6, 12), args_from=4),
    # kernel/workqueue.c's static primitive since v6.10, handed a va_list.
    Entry("__alloc_workqueue", 1, 2, "function", False, (6, 10)),
    Entry("devm_alloc_workqueue", 2, 3, "function", True, (7, 1), "1dfc9d60a69e", name_arg=1, args_from=4),
    Entry("devm_alloc_workqueue_noprof", 2, 3, "function", False, (7, 1), "0de4cb473aed", name_arg=1,
          args_from=4),
    Entry("alloc_ordered_workqueue", 1, -1, "macro", True, (2, 6, 37),
          adds=("WQ_UNBOUND", "__WQ_ORDERED"), max_active=1, args_from=2),
    Entry("alloc_ordered_workqueue_lockdep_map", 1, -1, "macro", True, (6, 12),
          adds=("WQ_UNBOUND", "__WQ_ORDERED"), max_active=1, args_from=3),
    Entry("devm_alloc_ordered_workqueue", 2, -1, "macro", True, (7, 1),
          adds=("WQ_UNBOUND", "__WQ_ORDERED"), max_active=1, name_arg=1, args_from=3),
    Entry("drmm_alloc_ordered_workqueue", 2, -1, "macro", True, (6, 8),
          adds=("WQ_UNBOUND", "__WQ_ORDERED"), max_active=1, name_arg=1, args_from=3),
    Entry("create_workqueue", -1, -1, "macro", True, (2, 6, 0),
          adds=("__WQ_LEGACY", "WQ_MEM_RECLAIM"), max_active=1, legacy=True),
    Entry("create_freezable_workqueue", -1, -1, "macro", True, (2, 6, 0),
          adds=("__WQ_LEGACY", "WQ_FREEZABLE", "WQ_UNBOUND", "WQ_MEM_RECLAIM"), max_active=1,
          legacy=True),
    Entry("create_singlethread_workqueue", -1, -1, "macro", True, (2, 6, 0),
          adds=("__WQ_LEGACY", "WQ_MEM_RECLAIM", "WQ_UNBOUND", "__WQ_ORDERED"), max_active=1,
          legacy=True),
)
BY_NAME = {e.name: e for e in ENTRIES}

# The functions that really create a queue, with where their flags and max_active are: every
# call of one is an allocation. alloc_workqueue() and devm_alloc_workqueue() stay here after
# they became alloc_hooks() macros, since callers keep writing them; the macro's own
# definition is then the API's, never a caller's. Everything else (the ordered and legacy
# macros, devm_/drmm_ helpers, a subsystem's own wrapper) is found as a wrapper of these,
# from the tree's own definitions.
SINKS = {e.name: (e.flags_arg, e.max_active_arg) for e in ENTRIES if e.kind == "function"}
# Where the same functions take the printf format of the queue's name and its arguments.
NAME_ARGS = {e.name: (e.name_arg, e.args_from) for e in ENTRIES if e.kind == "function"}
# What callers write: the names the Coccinelle rules match (spatch reads unexpanded source).
PUBLIC_FUNCTIONS = tuple(e.name for e in ENTRIES if e.kind == "function" and e.public)
LEGACY_MACROS = tuple(e.name for e in ENTRIES if e.legacy)
ORDERED_MACROS = tuple(e.name for e in ENTRIES if e.kind == "macro" and not e.legacy)
# The macro that wraps an allocation for memory allocation profiling (v6.17, fda6add92438):
# `alloc_hooks(call)` is `call` for everything wqlint asks.
TRANSPARENT_CALLS = ("alloc_hooks",)
NOPROF_SUFFIX = "_noprof"

# The CPU counts of include/linux/cpumask.h: what the max_active rules are about.
CPU_COUNT_CALLS = ("num_online_cpus", "num_possible_cpus", "num_present_cpus", "num_active_cpus")
CPU_COUNT_NAMES = ("nr_cpu_ids",)
CPU_COUNT_STATIC = {"NR_CPUS": 8192}  # CONFIG_NR_CPUS of distribution x86_64 kernels (MAXSMP)
CPU_MASK_COUNT = ("cpumask_weight",)
CPU_COUNT_ALL = CPU_COUNT_CALLS + CPU_COUNT_NAMES + tuple(CPU_COUNT_STATIC) + CPU_MASK_COUNT

# The queues of the system that are deprecated (__WQ_DEPRECATED, v7.2, 64d8eae3f895: the first
# work queued on one prints pr_warn_once) and what replaces them (v6.17, 128ea9f6ccfb).
DEPRECATED_SYSTEM_QUEUES = {"system_wq": "system_percpu_wq", "system_unbound_wq": "system_dfl_wq"}



@dataclass(frozen=True)
class QueueCall:
    """A call that takes a queue (include/linux/workqueue.h, the same in 6.12 and 7.3)."""

    name: str
    queue_arg: int  # index of the queue argument
    queues: bool  # queues work: reaches __queue_work(), where v7.2 checks __WQ_DEPRECATED


QUEUE_CALLS = (
    QueueCall("queue_work", 0, True), QueueCall("queue_work_on", 1, True),
    QueueCall("queue_work_node", 1, True), QueueCall("queue_delayed_work", 0, True),
    QueueCall("queue_delayed_work_on", 1, True), QueueCall("mod_delayed_work", 0, True),
    QueueCall("mod_delayed_work_on", 1, True), QueueCall("queue_rcu_work", 0, True),
    QueueCall("enable_and_queue_work", 0, True),
    # A flush or drain names the queue without queueing: no pr_warn_once, but the name goes.
    QueueCall("flush_workqueue", 0, False), QueueCall("__flush_workqueue", 0, False),
    QueueCall("drain_workqueue", 0, False),
)
QUEUE_CALLS_BY_NAME = {c.name: c for c in QUEUE_CALLS}
QUEUEING = {c.name: c for c in QUEUE_CALLS if c.queues}  # the calls that put a work item on a queue


# Later workqueue changes that kernels of an older series are known to carry: what a
# description of mainline misses for them ((major, minor) -> (which kernel, what it has)).
BACKPORTS = {
    (6, 12): ("Debian's 6.12.117", "WQ_PERCPU, system_percpu_wq and system_dfl_wq from v6.17"),
}


def backports(version: Version) -> str:
    """A word on what kernels of version's series are known to have beyond mainline, or ''."""
    known = BACKPORTS.get(tuple(version[:2]))
    return f"{known[0]} has {known[1]}" if known else ""


# The helpers that queue on a system queue their definition in include/linux/workqueue.h
# names (schedule_work() is queue_work(<queue>, work)), and the one that flushes it: which
# queue that is, is read from the scanned tree's header (helper_queue() stands in without one).
SCHEDULE_HELPERS = ("schedule_work", "schedule_work_on", "schedule_delayed_work", "schedule_delayed_work_on")
FLUSH_SCHEDULED = "flush_scheduled_work"


# Where schedule_*() take the work item (their queue is read from the header).
SCHEDULE_WORK_ARG = {"schedule_work": 0, "schedule_work_on": 1, "schedule_delayed_work": 0,
                     "schedule_delayed_work_on": 1}

# -- work items: what binds them to a function, what waits for them ------------------------

# The work item types of include/linux/workqueue.h: a delayed_work holds its work_struct as
# .work, an rcu_work as .work too.
WORK_TYPES = ("work_struct", "delayed_work", "rcu_work")
# The calls and macros that bind a work item to its function: (index of the work item, index
# of the function). DECLARE_* define the item (its name is the first argument).
WORK_BINDERS = {
    "INIT_WORK": (0, 1), "INIT_WORK_ONSTACK": (0, 1), "INIT_WORK_ONSTACK_KEY": (0, 1),
    "INIT_DELAYED_WORK": (0, 1), "INIT_DEFERRABLE_WORK": (0, 1), "INIT_DELAYED_WORK_ONSTACK": (0, 1),
    "INIT_DEFERRABLE_WORK_ONSTACK": (0, 1), "INIT_RCU_WORK": (0, 1), "INIT_RCU_WORK_ONSTACK": (0, 1),
    "__INIT_WORK": (0, 1), "__INIT_DELAYED_WORK": (0, 1),
    "DECLARE_WORK": (0, 1), "DECLARE_DELAYED_WORK": (0, 1), "DECLARE_DEFERRABLE_WORK": (0, 1),
}


@dataclass(frozen=True)
class FlushCall:
    """A call that waits for a queue or a work item and goes through check_flush_dependency()
    (kernel/workqueue.c; the same text in 6.1, 6.12 and 7.3): it WARNs when the running work's
    queue has WQ_MEM_RECLAIM without __WQ_LEGACY and the queue waited for lacks WQ_MEM_RECLAIM."""

    name: str
    waits_for: str  # "queue" | "work" | "helper" (flush_scheduled_work(): the helpers' queue)
    arg: int  # index of the queue or the work item (-1: none)
    how: str  # what it does, for the messages


FLUSH_CALLS = (
    FlushCall("flush_workqueue", "queue", 0, "flushes"),
    FlushCall("__flush_workqueue", "queue", 0, "flushes"),
    FlushCall("drain_workqueue", "queue", 0, "drains"),
    # destroy_workqueue() drains the queue first (drain_workqueue()).
    FlushCall("destroy_workqueue", "queue", 0, "destroys (draining it first)"),
    FlushCall("flush_work", "work", 0, "flushes"),
    # flush_delayed_work() queues a pending timer's work on the work's own queue, then flushes.
    FlushCall("flush_delayed_work", "work", 0, "flushes"),
    FlushCall("flush_rcu_work", "work", 0, "flushes"),
    FlushCall("flush_scheduled_work", "helper", -1, "flushes"),
)
FLUSH_CALLS_BY_NAME = {c.name: c for c in FLUSH_CALLS}
# What passes from_cancel to __flush_work() and so is never checked (de35994ecd2d, in 6.1,
# 6.12 and 7.3): waiting for a work item being cancelled cannot need the rescuer.
FROM_CANCEL = ("cancel_work_sync", "cancel_delayed_work_sync", "disable_work_sync",
               "disable_delayed_work_sync")
# The calls that drop a work item's pending instance (include/linux/workqueue.h, kernel/
# workqueue.c; disable_*() from v6.10), each given the item first: where the code makes one of
# an item that a work elsewhere flushes, a cancel may stand for that flush.
CANCELS = ("cancel_work", "cancel_delayed_work", "disable_work", "disable_delayed_work") + FROM_CANCEL
# The calls that wait until a queue or a work item is idle (kernel/workqueue.c, the same in 6.1,
# 6.12, 7.2 and 7.3; disable_*_sync() from v6.10): from the work itself, each waits for itself.
# The queue's: __flush_workqueue() waits for every work queued before it (destroy_workqueue()
# and drain_workqueue() flush first); the work item's: __flush_work() puts a barrier behind
# the running instance (cancel_*_sync() and disable_*_sync() with from_cancel). No version
# WARNs: lockdep reports the recursion (touch_wq_lockdep_map(), touch_work_lockdep_map(); in
# 6.1 lock_map_acquire() of the same maps). Name -> (what it waits for, its argument).
SELF_WAITS = {
    "flush_workqueue": ("queue", 0), "__flush_workqueue": ("queue", 0), "drain_workqueue": ("queue", 0),
    "destroy_workqueue": ("queue", 0),
    "flush_work": ("work", 0), "flush_delayed_work": ("work", 0), "flush_rcu_work": ("work", 0),
    "cancel_work_sync": ("work", 0), "cancel_delayed_work_sync": ("work", 0),
    "disable_work_sync": ("work", 0), "disable_delayed_work_sync": ("work", 0),
}
# The calls that tell whether they dropped the last reference to an object (include/linux/
# refcount.h, atomic.h, kref.h, the same in 6.1, 6.12, 7.2 and 7.3): what such a test guards
# is the teardown of an object nothing else holds, and a work holds a reference to what it
# works on while it runs (its caller's or its own), so a path through such a guard is not
# taken as the work's own (scan.guards).
LAST_REFERENCE = frozenset({
    "refcount_dec_and_test", "refcount_dec_and_lock", "refcount_dec_and_lock_irqsave",
    "refcount_dec_and_mutex_lock", "refcount_sub_and_test", "atomic_dec_and_test",
    "atomic_long_dec_and_test", "atomic64_dec_and_test", "atomic_sub_and_test", "atomic_dec_and_lock",
    "atomic_dec_and_lock_irqsave", "atomic_dec_and_mutex_lock", "kref_put", "kref_put_mutex", "kref_put_lock",
})
# The flag of a queue whose works do not run while tasks are frozen for a system suspend
# (freeze_workqueues_begin() before the devices' suspend callbacks, thaw_workqueues() after
# their resume): on such a queue a work never sees a device's suspended state set.
FREEZABLE_FLAG = "WQ_FREEZABLE"
# The system queues allocated with it (kernel/workqueue.c, 6.1 to 7.3), for a scan that does
# not read their allocation.
FREEZABLE_SYSTEM_QUEUES = ("system_freezable_wq", "system_freezable_power_efficient_wq")
# The flag check_flush_dependency() asks of both queues, and the one that exempts the flusher.
RESCUER_FLAG = "WQ_MEM_RECLAIM"
LEGACY_FLAG = "__WQ_LEGACY"
# The queues kernel/workqueue.c allocates for everyone (workqueue_init_early()): none has
# WQ_MEM_RECLAIM in 6.1, 6.12 or 7.3 (the tree's own allocation wins where it is scanned).
SYSTEM_QUEUES = ("system_wq", "system_percpu_wq", "system_highpri_wq", "system_long_wq",
                 "system_dfl_long_wq", "system_unbound_wq", "system_dfl_wq", "system_freezable_wq",
                 "system_power_efficient_wq", "system_freezable_power_efficient_wq", "system_bh_wq",
                 "system_bh_highpri_wq")


def helper_queue(version: Version) -> str:
    """The queue of schedule_work() and flush_scheduled_work(): system_wq, system_percpu_wq
    since the system queue split (v6.17, 128ea9f6ccfb; Debian's 6.12.117 has it too, the
    tree's own header wins)."""
    return "system_percpu_wq" if has_system_queue_replacements(version) else "system_wq"


# Names a fix may write that older kernels lack, the version that added each, and what an
# older kernel meant by it: a module that also builds for those defines the name to that under
# a version guard (WQ_PERCPU is an enumerator, so #ifndef cannot test it). Before v6.17 a queue
# without WQ_UNBOUND is per-CPU (so 0 keeps the meaning), system_wq is the per-CPU system queue
# and system_unbound_wq the unbound one (930c2ea566af, 128ea9f6ccfb).
STAND_INS = {
    "WQ_PERCPU": ((6, 17), "0"),
    "system_percpu_wq": ((6, 17), "system_wq"),
    "system_dfl_wq": ((6, 17), "system_unbound_wq"),
}


def has_system_queue_replacements(version: Version) -> bool:
    """v6.17 (128ea9f6ccfb): system_percpu_wq and system_dfl_wq (Debian's 6.12.y has them too:
    the tree's own header wins)."""
    return version[:2] >= (6, 17)


# WQ_* flag bits as include/linux/workqueue.h has them, and the version each appeared in.
FLAG_BITS = (
    ("WQ_BH", 0, (6, 9)),
    ("WQ_UNBOUND", 1, (2, 6, 36)),
    ("WQ_FREEZABLE", 2, (2, 6, 36)),
    ("WQ_MEM_RECLAIM", 3, (2, 6, 36)),
    ("WQ_HIGHPRI", 4, (2, 6, 36)),
    ("WQ_CPU_INTENSIVE", 5, (2, 6, 36)),
    ("WQ_SYSFS", 6, (3, 10)),
    ("WQ_POWER_EFFICIENT", 7, (3, 11)),
    # v6.17 (930c2ea566af); Debian's 6.12.y carries it too: a tree's own header wins.
    ("WQ_PERCPU", 8, (6, 17)),
    ("__WQ_DESTROYING", 15, (6, 4)),
    ("__WQ_DRAINING", 16, (2, 6, 36)),
    ("__WQ_ORDERED", 17, (3, 14)),
    ("__WQ_LEGACY", 18, (4, 8)),
    ("__WQ_DEPRECATED", 19, (7, 2)),
)
FLAG_NAMES = frozenset(name for name, _bit, _since in FLAG_BITS)  # every flag, by name
# Names of the API's header made of flags, that rules read as the tree defines them too.
FLAG_MASKS = ("__WQ_BH_ALLOWS",)  # the flags a WQ_BH queue may have


def has_flag(name: str, version: Version) -> bool:
    return any(n == name and version[:3] >= since for n, _, since in FLAG_BITS)


# -- what a kernel version does with a queue -----------------------------------------------

def unbound_scope(version: Version) -> str:
    """'node', 'cpu' or 'system': what an unbound queue's max_active limits.

    Per NUMA node before v6.6; per CPU from v6.6 (636b927eba5b) to v6.8 and on the whole 6.6.y
    LTS line (the system-wide series was backported to 6.6.23 and reverted in 6.6.25);
    system-wide from v6.9 (5797b1c18919), frozen at the value seen at allocation."""
    v = version[:2]
    if v < (6, 6):
        return "node"
    if v < (6, 9) or v == (6, 6):
        return "cpu"
    return "system"


def unbound_one_is_ordered(version: Version) -> bool:
    """v6.9 (3bc1e711c26b) stopped treating unbound queues with max_active 1 as ordered."""
    return unbound_scope(version) != "system"


def wq_max_active(version: Version) -> int:
    """WQ_MAX_ACTIVE: 512, 2048 since v6.13 (with WQ_DFL_ACTIVE 1024)."""
    return 2048 if version[:2] >= (6, 13) else 512


def max_active_limit(version: Version, unbound: bool, ncpus: int) -> int:
    """What wq_clamp_max_active() clamps max_active to (with a pr_warn "out of range,
    clamping"): WQ_MAX_ACTIVE, and for an unbound queue before v6.6 WQ_UNBOUND_MAX_ACTIVE,
    max(WQ_MAX_ACTIVE, 4 * num_possible_cpus())."""
    limit = wq_max_active(version)
    if unbound and unbound_scope(version) == "node":
        return max(limit, 4 * ncpus)
    return limit


def wq_name_len(version: Version) -> int:
    """WQ_NAME_LEN of kernel/workqueue.c: the size of wq->name, NUL included, so a name keeps
    WQ_NAME_LEN - 1 bytes. 24 since the name became a fixed array (ecf6881ff349, v3.10); 32
    since v6.9 (31c89007285d). The 6.6.y and 6.8.y lines had 32 only in 6.6.23-6.6.24 and
    6.8.2-6.8.3: backported with the system-wide max_active series (a Stable-dep-of
    5797b1c18919) and reverted with it. The scanned tree's own kernel/workqueue.c wins; this
    stands in only where it is missing."""
    return 32 if name_truncation_warns(version) else 24


def name_truncation_warns(version: Version) -> bool:
    """Whether __alloc_workqueue() says so when the formatted name does not fit (from
    31c89007285d, v6.9: `name_len = vsnprintf(wq->name, ...)`, then
    `pr_warn_once("workqueue: name exceeds WQ_NAME_LEN. Truncating to: %s\\n", wq->name)`,
    once per boot); before, vsnprintf() truncates the name silently. Checked in the trees:
    6.1 silent with 24, 6.12 and 7.3 warn with 32."""
    v = tuple(version) + (0,) * (3 - len(version))
    if v[:2] == (6, 6):
        return 23 <= v[2] <= 24
    if v[:2] == (6, 8):
        return 2 <= v[2] <= 3
    return v[:2] >= (6, 9)


def name_is_array(version: Version) -> bool:
    """wq->name is a char array of WQ_NAME_LEN since ecf6881ff349 (v3.10); before it was the
    caller's pointer, never truncated."""
    return tuple(version)[:2] >= (3, 10)


def affinity_flags_enforced(version: Version) -> bool:
    """v7.2 (21c05ca88a54): __alloc_workqueue() WARN_ONCEs when a queue has neither
    WQ_PERCPU nor WQ_UNBOUND (and makes it WQ_PERCPU), or both (and drops WQ_PERCPU)."""
    return version[:2] >= (7, 2)


def bh_allows_percpu(version: Version) -> bool:
    """Whether a WQ_BH queue may carry WQ_PERCPU (__WQ_BH_ALLOWS). 7.3 has
    `WQ_BH | WQ_HIGHPRI | WQ_PERCPU`, 6.12 `WQ_BH | WQ_HIGHPRI` (WQ_BH | WQ_PERCPU fails the
    allocation there). It must come with the WARN_ONCE of v7.2 (21c05ca88a54), which would
    otherwise fire for every BH queue; the tree's own header wins."""
    return affinity_flags_enforced(version)


def system_queues_deprecated(version: Version) -> bool:
    """v7.2 (64d8eae3f895): system_wq and system_unbound_wq carry __WQ_DEPRECATED."""
    return version[:2] >= (7, 2)


def default_affinity_scope(version: Version) -> str:
    """The default affinity scope of unbound queues: 'cache' since the affinity scopes of
    v6.6, 'cache_shard' since v7.1 (5920d046f7ae, made the default by 4cdc8a7389d5)."""
    if version[:2] >= (7, 1):
        return "cache_shard"
    return "cache" if version[:2] >= (6, 6) else "numa"


def ordered_sysfs_allowed(version: Version) -> bool:
    """v7.1 (a4aa8d94f243): an ordered queue may have WQ_SYSFS (max_active read-only there);
    before, workqueue_sysfs_register() WARN_ONs and the allocation fails."""
    return version[:2] >= (7, 1)


def has_alloc_hooks(version: Version) -> bool:
    """v6.17 (fda6add92438): alloc_workqueue() is an alloc_hooks() macro."""
    return version[:2] >= (6, 17)


def available(entry: Entry, version: Version) -> bool:
    return version[:3] >= entry.since


# -- a stand-in include/linux/workqueue.h ----------------------------------------------------

def builtin_header(version: Version) -> bytes:
    """include/linux/workqueue.h as the given version declares what wqlint reads of it: the
    WQ_* values, the allocation functions and the ordered and legacy macros. Used only when
    the scanned tree has none of its own (a directory of loose files)."""
    def show(v):
        return ".".join(str(x) for x in v[:2])
    out = ["/* SPDX-License-Identifier: GPL-2.0 */",
           f"/* The workqueue API of v{show(version)} as wqlint describes it (wqlint/api.py). */",
           "enum wq_flags {"]
    for name, bit, since in FLAG_BITS:
        if version[:3] >= since:
            out.append(f"\t{name} = 1 << {bit},")
    if has_flag("WQ_BH", version):
        out.append(f"\t__WQ_BH_ALLOWS = WQ_BH | WQ_HIGHPRI{' | WQ_PERCPU' if bh_allows_percpu(version) else ''},")
    out += ["};", "", "enum wq_consts {",
            f"\tWQ_MAX_ACTIVE = {wq_max_active(version)},",
            "\tWQ_UNBOUND_MAX_ACTIVE = WQ_MAX_ACTIVE,",
            "\tWQ_DFL_ACTIVE = WQ_MAX_ACTIVE / 2,",
            "\tWQ_DFL_MIN_ACTIVE = 8,", "};", ""]
    if has_alloc_hooks(version):
        out += ["struct workqueue_struct *",
                "alloc_workqueue_noprof(const char *fmt, unsigned int flags, int max_active, ...);",
                "#define alloc_workqueue(...) alloc_hooks(alloc_workqueue_noprof(__VA_ARGS__))"]
    else:
        out += ["struct workqueue_struct *",
                "alloc_workqueue(const char *fmt, unsigned int flags, int max_active, ...);"]
    if available(BY_NAME["devm_alloc_workqueue"], version):
        out += ["struct workqueue_struct *",
                "devm_alloc_workqueue_noprof(struct device *dev, const char *fmt, unsigned int flags,",
                "\t\t\t    int max_active, ...);",
                "#define devm_alloc_workqueue(...) alloc_hooks(devm_alloc_workqueue_noprof(__VA_ARGS__))"]
    if available(BY_NAME["alloc_workqueue_lockdep_map"], version):
        out += ["struct workqueue_struct *",
                "alloc_workqueue_lockdep_map(const char *fmt, unsigned int flags, int max_active,",
                "\t\t\t    struct lockdep_map *lockdep_map, ...);",
                "#define alloc_ordered_workqueue_lockdep_map(fmt, flags, lockdep_map, args...) \\",
                "\talloc_workqueue_lockdep_map(fmt, WQ_UNBOUND | __WQ_ORDERED | (flags), 1, lockdep_map, ##args)"]
    out += ["#define alloc_ordered_workqueue(fmt, flags, args...) \\",
            "\talloc_workqueue(fmt, WQ_UNBOUND | __WQ_ORDERED | (flags), 1, ##args)"]
    if available(BY_NAME["devm_alloc_ordered_workqueue"], version):
        out += ["#define devm_alloc_ordered_workqueue(dev, fmt, flags, args...) \\",
                "\tdevm_alloc_workqueue(dev, fmt, WQ_UNBOUND | __WQ_ORDERED | (flags), 1, ##args)"]
    # v7.2 (21c05ca88a54) gave create_workqueue() the WQ_PERCPU the kernel would add anyway.
    percpu = " | WQ_PERCPU" if affinity_flags_enforced(version) else ""
    legacy = "__WQ_LEGACY" if has_flag("__WQ_LEGACY", version) else "0"
    out += ["#define create_workqueue(name) \\",
            f"\talloc_workqueue(\"%s\", {legacy} | WQ_MEM_RECLAIM{percpu}, 1, (name))",
            "#define create_freezable_workqueue(name) \\",
            f"\talloc_workqueue(\"%s\", {legacy} | WQ_FREEZABLE | WQ_UNBOUND | WQ_MEM_RECLAIM, 1, (name))",
            "#define create_singlethread_workqueue(name) \\",
            f"\talloc_ordered_workqueue(\"%s\", {legacy} | WQ_MEM_RECLAIM, name)", ""]
    # The system queues last, so that the lines above keep their numbers in chains.
    out += ["extern struct workqueue_struct *system_wq;",
            "extern struct workqueue_struct *system_unbound_wq;"]
    if has_system_queue_replacements(version):
        out += [f"extern struct workqueue_struct *{n};" for n in DEPRECATED_SYSTEM_QUEUES.values()]
    queue = helper_queue(version)
    out += ["static inline bool schedule_work(struct work_struct *work)",
            "{", f"\treturn queue_work({queue}, work);", "}",
            "static inline bool schedule_delayed_work(struct delayed_work *dwork, unsigned long delay)",
            "{", f"\treturn queue_delayed_work({queue}, dwork, delay);", "}"]
    out.append("")
    return "\n".join(out).encode()
