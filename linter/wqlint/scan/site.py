"""The kinds of site the scanner resolves and the rules judge: an allocation (Site), a queue
named at a call (QueueUse), a work item reaching a flush (Flow), and the data they carry
(NameArgs, Key, Target, FlagBits). Data only: below the scanner and the rules, importing
nothing of theirs."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from wqlint.finding import Step
from wqlint.scan.values import Param, Value, cases, decision_arms


@dataclass(frozen=True)
class NameArgs:
    """The queue's name as the call makes it: the printf format and the arguments formatted
    into it (api.NAME_ARGS), resolved like flags and max_active, through wrappers."""

    fmt: Value
    args: tuple[Value, ...] = ()  # Values of the arguments after the format, in order
    # The variable arguments of a variadic macro (its parameter at this index and after) not
    # yet bound: they come from the macro's callers. None once every argument is known.
    rest: Optional[Param] = None
    step: Optional[Step] = None  # the Step naming the format argument at the sink


@dataclass
class Site:
    entry: str  # the name called at the reported location: alloc_workqueue or a wrapper
    path: str
    line: int
    col: int
    end_col: int
    flags: Value
    max_active: Value
    prefix: list[Step]  # Steps from the reported call inward to the alloc_workqueue() call
    via: list[str] = field(default_factory=list)  # wrapper names, outermost first
    suppressed: frozenset[str] = frozenset()  # rule ids suppressed by a comment at the call
    # Where the parts of the call (PARTS) are decided, for the rules to choose where they judge
    # it (wqlint.checks.judge): when set, the only parts known here, the others coming from the
    # callers of a wrapper; and the parts decided at another site of the same call (the
    # wrapper's own, when a wrapper decides them and its callers the rest).
    parts: Optional[frozenset[str]] = None
    parts_elsewhere: frozenset[str] = frozenset()
    flags_arg: int = -1  # argument of the reported call that carries the flags (-1: none)
    max_active_arg: int = -1  # argument of the reported call that is max_active (-1: none)
    # What names the queue across edits (review): the function the reported call is in, and
    # its name argument (the format string: the first string argument, else the first one).
    function: str = ""
    queue: str = ""
    end_line: int = 0  # last line of the reported call
    arg_texts: tuple[str, ...] = ()  # the reported call's arguments as written
    name: Optional[NameArgs] = None  # the queue's name: format and arguments


# The parts of an allocation site a rule can read (its READS): the Site fields of those names.
PARTS = frozenset({"flags", "max_active", "name"})


def paths(site: Site) -> list:
    """The site once per combination of the decisions that its flags and its max_active
    both depend on (flags and max_active set in the same branch go together), else as is.
    The decisions taken are steps of the narrowed values' chains."""
    shared = set(decision_arms(site.flags)) & set(decision_arms(site.max_active))
    if not shared:
        return [site]
    return [replace(site, flags=f, max_active=m)
            for _, (f, m) in cases((site.flags, site.max_active), keys=shared)]


@dataclass
class QueueUse:
    """The second kind of site: a name the API lists (api.DEPRECATED_SYSTEM_QUEUES) passed as
    the queue argument of a call that takes a queue (api.QUEUE_CALLS). Judged by the rules
    that READ "queue"."""

    call: str  # the function called: queue_work, flush_workqueue...
    queue: str  # the name passed
    arg: int  # the index of the queue argument
    path: str
    line: int  # of the called name (where the fixer finds the call)
    col: int
    end_col: int
    step: Step  # the Step showing the call
    function: str = ""  # the function the call is in
    suppressed: frozenset[str] = frozenset()
    conditions: tuple[Step, ...] = ()  # Steps naming the #if conditions the call is compiled under
    compat_pair: str = ""  # an #if whose other branch uses the replacement already
    compat_undecided: bool = False  # that #if is left for the module's configure step to decide
    within: str = ""  # the function or macro whose definition holds the call
    # (helper, Step) of the calls in the same file of the API's helpers that queue on a
    # system queue themselves (api.SCHEDULE_HELPERS): the work a flush may mean to wait for.
    scheduled: tuple[tuple[str, Step], ...] = ()
    # The work the flush cannot wait for since the helpers queue on another queue
    # (scan.missed); None when none was found or the helpers still queue on the flushed queue.
    missed: Optional["Missed"] = None


@dataclass(frozen=True)
class Missed:
    """A work item queued with a helper before a flush that no longer waits for it."""

    item: str  # the item as its queueing call names it
    helper: str  # that call: one of api.SCHEDULE_HELPERS
    through: tuple[str, ...]  # the functions run on the way from the flushing function, in order
    steps: tuple[Step, ...]  # the calls on the way, then the queueing call


@dataclass(frozen=True)
class Key:
    """Where a queue or a work item is kept: a variable, or a member of a struct."""

    kind: str  # "var" | "member"
    name: str
    tag: str = ""  # the struct's tag, when known

    def matches(self, other: "Key") -> bool:
        return (self.kind == other.kind and self.name == other.name
                and (not self.tag or not other.tag or self.tag == other.tag))

    def show(self) -> str:
        if self.kind == "var":
            return self.name
        return f"{'struct ' + self.tag if self.tag else ''}.{self.name}" if self.tag else f".{self.name}"


@dataclass(frozen=True)
class Target:
    """What a flush waits for, and the queues that is: allocation sites, or a system queue."""

    what: str  # "queue" | "work"
    key: Optional[Key]
    sites: tuple[Site, ...] = ()  # allocation Sites of the queue(s) waited for
    system: str = ""  # a system queue's name (api.SYSTEM_QUEUES) when no site is known
    queued: tuple[Step, ...] = ()  # Steps putting the flushed work item on those queues
    complete: bool = True  # every queue the work item goes to is known
    func: str = ""  # the function the flushed work item is bound to, when one is known
    holders: tuple[Optional[Key], ...] = ()  # where each of sites keeps its queue (queue_key())


@dataclass(frozen=True)
class Cancel:
    """A cancel of a flushed work item elsewhere in the code (scan.cancels): where it is."""

    call: str  # api.CANCELS
    path: str
    line: int
    function: str  # the function making it


@dataclass
class Flow:
    """A work item on a queue whose work function reaches a flush: the third kind of site,
    judged by the rules that READ "flow"."""

    site: Site  # the allocation of the queue the work runs on
    queue: Key
    queued: Step  # the call putting the work item on it
    bound: Step  # the binding of the work item to its function
    function: str  # the work function
    calls: tuple[Step, ...]  # the calls from the work function to the function that flushes
    flush: Step  # the flush
    call: str  # the flushing function (api.FLUSH_CALLS)
    target: Target
    path: str = ""  # where the finding is reported: the flush
    line: int = 0
    col: int = 0
    end_col: int = 0
    suppressed: frozenset[str] = frozenset()
    # The flush is outside the paths scanned (another subsystem's), the work inside:
    # reported to the work's maintainer, with no edit of the other subsystem's queue.
    elsewhere: bool = False
    waited: str = ""  # what the flush is given, as written there ('assoc->queues[i]->work_q')
    within: str = ""  # the function whose body makes the flush
    # A cancel of the same work item the code makes elsewhere (a flush of one item only).
    cancel: Optional[Cancel] = None


@dataclass
class SelfWait:
    """A work function that, itself or through the calls it makes, waits for the queue it
    runs on or for its own work item."""

    path: str  # the wait
    line: int
    col: int
    end_col: int
    call: str  # the waiting call (api.SELF_WAITS)
    what: str  # "queue" | "work": what it waits for
    waited: str  # the queue or work item waited for, as written at the wait
    function: str  # the work function
    bound: Step  # the binding of the work item to its function
    queued: tuple[Step, ...]  # calls putting the work item on the queue(s) it runs on
    queues: tuple[str, ...]  # those queues, as named there
    calls: tuple[Step, ...]  # the calls from the work function to the function that waits
    wait: Step
    suppressed: frozenset[str] = frozenset()
    sites: tuple[Site, ...] = ()  # the allocations of those queues, when known (their names as the kernel prints them)


@dataclass(frozen=True)
class FlagBits:
    """The values of the API's flags (api.FLAG_BITS) and masks (api.FLAG_MASKS) as the
    scanned tree defines them, by name: 0 where it does not."""

    bits: dict[str, int] = field(hash=False)

    def bit(self, name: str) -> int:
        """The value of the flag or mask name in the tree (0 when it does not define it)."""
        return self.bits[name]

    @property
    def affinity(self) -> int:
        """The flags that say where a queue's work runs. WQ_BH is one of them only where a BH
        queue may not carry WQ_PERCPU (6.12: __WQ_BH_ALLOWS = WQ_BH | WQ_HIGHPRI, and
        WQ_BH | WQ_PERCPU fails the allocation); where __WQ_BH_ALLOWS includes WQ_PERCPU
        (v7.2, 21c05ca88a54) a WQ_BH queue without it gets the same WARN_ONCE as any other."""
        percpu = self.bit("WQ_PERCPU")
        bh = 0 if self.bit("__WQ_BH_ALLOWS") & percpu else self.bit("WQ_BH")
        return percpu | self.bit("WQ_UNBOUND") | bh


@dataclass(frozen=True)
class ApiFacts:
    """What the scanned tree says of the workqueue API, as the scanner reports it: the rules
    build their context from it (wqlint.checks.context)."""

    version: tuple
    version_source: str
    bits: FlagBits
    api_header: Optional[str]  # where alloc_workqueue() is declared: the API's own values
    declared: frozenset = frozenset()  # the API header's names of interest (system queues)
    api_files: frozenset = frozenset()  # where the API itself is implemented (kernel/workqueue.c)
    # WQ_NAME_LEN and whether a longer name is warned about: from the tree's kernel/workqueue.c
    # (name_len_step shows where), else api.wq_name_len() / api.name_truncation_warns().
    name_len: int = 32
    name_warns: bool = True
    name_len_step: Optional[Step] = None
    # The queue each helper of api.SCHEDULE_HELPERS and api.FLUSH_SCHEDULED uses, as the API
    # header defines it: {helper: (queue, Step of the definition's line naming it)}.
    helper_queues: dict = field(default_factory=dict, hash=False)
