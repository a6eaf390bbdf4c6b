"""The rules' context: what a rule judges a site by besides the site itself. Built here, above
the scanner, from the facts of the tree's workqueue API that the scanner reports (ApiFacts),
the catalogue, and the machine the messages describe."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from wqlint.catalogue import Catalogue
from wqlint.finding import Step
from wqlint.machine import MAX_CPUS, NCPUS
from wqlint.scan.site import ApiFacts, FlagBits


@dataclass
class CheckContext:
    catalogue: Catalogue
    version: tuple
    version_source: str
    bits: FlagBits
    has_percpu: bool
    api_header: Optional[str]  # where alloc_workqueue() is declared: the API's own values
    ncpus: int = NCPUS  # the machine the messages describe
    max_cpus: int = MAX_CPUS  # the largest machine a limit of max_active is judged for
    declared: frozenset = frozenset()  # the API header's names of interest (system queues)
    api_files: frozenset = frozenset()  # where the API itself is implemented (kernel/workqueue.c)
    # WQ_NAME_LEN and whether a longer name is warned about: from the tree's kernel/workqueue.c
    # (name_len_step shows where), else api.wq_name_len() / api.name_truncation_warns().
    name_len: int = 32
    name_warns: bool = True
    name_len_step: Optional[Step] = None
    # The queue each helper of api.SCHEDULE_HELPERS and api.FLUSH_SCHEDULED uses, as the API
    # header defines it: {helper: (queue, Step of the definition's line naming it)}.
    helper_queues: dict = field(default_factory=dict)
    # (work, id(of)) -> (of, work(of, self)) of once(): of is held so that its id stays its own
    _done: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def once(self, work, of):
        """work(of, self), worked out once for every rule that asks (of: a site's flags...)."""
        got = self._done.get((work, id(of)))
        if got is None or got[0] is not of:
            got = self._done[(work, id(of))] = (of, work(of, self))
        return got[1]

    def defines(self, symbol: str) -> bool:
        """Does the tree's include/linux/workqueue.h define or declare symbol?"""
        return self.has_percpu if symbol == "WQ_PERCPU" else symbol in self.declared


def make_context(catalogue: Catalogue, facts: ApiFacts, ncpus: int = NCPUS, max_cpus: int = MAX_CPUS) -> CheckContext:
    """The rules' context for a tree whose API the scanner reported as facts."""
    return CheckContext(catalogue, facts.version, facts.version_source, facts.bits,
                        has_percpu=bool(facts.bits.bit("WQ_PERCPU")), api_header=facts.api_header,
                        ncpus=ncpus, max_cpus=max_cpus, declared=facts.declared, api_files=facts.api_files,
                        name_len=facts.name_len, name_warns=facts.name_warns,
                        name_len_step=facts.name_len_step, helper_queues=facts.helper_queues)
