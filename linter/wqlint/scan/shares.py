"""The flows of works to flushes (scan.work) and the waits of works for themselves
(scan.selfwait) found on every core: each worker a process forked once the work model is
built (wqlint.tools.forked: it sees the tree's index and the model as they are,
copy-on-write), given the waits (work()), or the allocation sites or the waits of some
subsystems, by their directory.

A flow's or a wait's answer is its own: the same in a worker as in one process (a test
compares the whole trees' reports of -j 1 and -j 4). The parts are made from the weights
alone, so the same scan splits the same way; a worker's searches of the tree (the index's
rounds) are its own, and the files it read are told to the parent (scan.store keeps what a
scan read), with the questions it asked of the subsystems' text (the next scan after a
change answers them at once: scan.work's prime()). What every worker reads the same (the
tree's description of its tables and functions) is read once, before they start. The cost
is in CPU: a subsystem that the works of two parts reach is searched in both.
"""
from __future__ import annotations

import gc
import io
import os
import pickle
from typing import Callable, Optional, Sequence

from wqlint import api, tools
from wqlint.scan import selfwait
from wqlint.scan.work import WorkModel


def work(index, model: WorkModel, flows_of: Optional[Callable], waits_of: Optional[Callable], jobs: int,
         rounds: Callable[[Callable], list]) -> tuple:
    """(flows, waits): rounds(flows_of), the flows of the allocation sites flows_of(site)
    wants, and scan.selfwait.self_waits() of the files waits_of(rel) wants; [] for one not
    asked (None).

    With jobs > 1 and both asked, in the scan of a whole tree (which reads the tree's
    description: Description.begun()), the waits are found in a worker process of their own
    while this one finds the flows (with their sites split by subsystem over it and jobs - 2
    more workers): the two follow much the same functions, and so do the works of two
    subsystems (on linux-source-6.12 the flows' two halves searched 1805 of the same
    directories, 2113 and 1936 in all), so that a split by kind takes the cores where a
    split by subsystem mostly works twice. Otherwise one after the other, each split by
    subsystem: the scan of a directory reads the description only when a path leaves the
    subsystem (seconds of searching the whole tree, for one of them or for neither), once."""
    if flows_of is None or waits_of is None or jobs < 2 or not hasattr(os, "fork") \
            or not model.calls.ops.begun():
        return (flows(index, model, flows_of, jobs, rounds) if flows_of is not None else [],
                self_waits(index, model, waits_of, jobs) if waits_of is not None else [])
    model.calls.ops.load()  # read once, before the workers start, rather than in each
    chosen = parts(_site_weights(model, flows_of), jobs - 1) or [frozenset()]
    if len(chosen) > 1:
        model.prime("flows")  # (answered once, for all the flows' workers)

    def flows_in(part: frozenset) -> Callable[[], list]:
        return lambda: rounds(flows_of if len(chosen) == 1 else
                              lambda site: directory(site.path) in part and flows_of(site))
    tasks = [flows_in(chosen[0]), lambda: selfwait.self_waits(index, model, waits_of)]
    tasks += [flows_in(part) for part in chosen[1:]]
    got = _spread(index, tasks, shared=model.sites)
    if got is None:
        return rounds(flows_of), selfwait.self_waits(index, model, waits_of)
    return _in_order(model, [got[0]] + got[2:]), got[1]


def self_waits(index, model: WorkModel, wanted, jobs: int) -> list:
    """scan.selfwait.self_waits(); with jobs > 1, the waits of each subsystem (the wait's
    directory) in one of jobs worker processes."""
    weights: dict = {}
    for name in api.SELF_WAITS:
        occ = index.occurrences(name)
        if occ is None:  # not searched yet: which directories hold waits is not known
            weights = {}
            break
        for rel, _line in occ:
            if wanted(rel):
                weights[directory(rel)] = weights.get(directory(rel), 0) + 1
    model.calls.ops.settle()
    if jobs > 1 and len(weights) > 1:
        model.prime("waits")  # (answered once, for all its workers)
    got = split(index, jobs, weights, lambda part: selfwait.self_waits(
        index, model, lambda rel: directory(rel) in part and wanted(rel)), shared=model.sites)
    if got is None:
        return selfwait.self_waits(index, model, wanted)
    # A wait is its own file's, one of a part: in the order scan.selfwait gives them.
    return sorted((w for part in got for w in part), key=lambda w: (w.path, w.line, w.col, w.function))


def flows(index, model: WorkModel, wanted, jobs: int, rounds: Callable[[Callable], list]) -> list:
    """rounds(wanted): the flows of the allocation sites wanted; with jobs > 1, those of the
    sites of each subsystem (the site's directory) in one of jobs worker processes, given
    back in the order of the model's sites, as one process finds them."""
    weights = _site_weights(model, wanted)
    if jobs > 1 and len(weights) > 1:
        model.calls.ops.load()  # read once, before the workers start, rather than in each
        model.prime("flows")
    got = split(index, jobs, weights, lambda part: rounds(lambda site: directory(site.path) in part and wanted(site)),
                shared=model.sites)
    if got is None:
        return rounds(wanted)
    return _in_order(model, got)


def _site_weights(model: WorkModel, wanted) -> dict:
    """{directory: how many of the allocation sites wanted it holds}."""
    weights: dict = {}
    for site in model.sites:
        if wanted(site):
            weights[directory(site.path)] = weights.get(directory(site.path), 0) + 1
    return weights


def _in_order(model: WorkModel, got: list) -> list:
    """The flows of parts, in the order of the model's sites, as one process finds them."""
    order = {id(site): n for n, site in enumerate(model.sites)}
    return sorted((f for part in got for f in part), key=lambda f: order[id(f.site)])


def directory(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def parts(weights: dict, jobs: int) -> list:
    """The keys of weights ({directory: how much work it holds}) in at most jobs parts of
    about the same weight: the heaviest first, each to the lightest part so far (the first
    of equals). The same weights and jobs give the same parts."""
    bins: list = [[0, []] for _ in range(max(1, min(jobs, len(weights))))]
    for key in sorted(weights, key=lambda k: (-weights[k], k)):
        lightest = min(range(len(bins)), key=lambda i: (bins[i][0], i))
        bins[lightest][0] += weights[key]
        bins[lightest][1].append(key)
    return [frozenset(keys) for _weight, keys in bins if keys]


def split(index, jobs: int, weights: dict, run: Callable[[frozenset], object], shared: Sequence = ()) -> Optional[list]:
    """[run(part)] of the parts() of weights, the first worked out in this process, each
    other in a worker process; None when the work is not split (one job, one part, no
    fork, a worker that failed): the caller works it out itself, in this process. shared:
    objects of this process a result may hold (the allocation sites), given back as
    themselves rather than as copies."""
    if jobs < 2 or not hasattr(os, "fork"):
        return None
    chosen = parts(weights, jobs)
    if len(chosen) < 2:
        return None
    return _spread(index, [lambda part=part: run(part) for part in chosen], shared)


def _spread(index, tasks: list, shared: Sequence = ()) -> Optional[list]:
    """[task()] of tasks, the first worked out in this process, each other in a worker
    process (whose reading of the tree is then told to this one's index); None when a
    worker failed. shared: as for split()."""
    ids = {id(obj): n for n, obj in enumerate(shared)}
    # Not collected while the workers start: a pass would write to every object the parent
    # holds, which the workers then no longer share with it.
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()

    def task(n: int) -> bytes:
        before = _Seen(index)
        got = tasks[n]()
        return _dumps((got, before.since(index)), ids)
    own: list = []
    try:
        answers = tools.forked(task, list(range(1, len(tasks))), lambda: own.append(tasks[0]()))
    finally:
        if enabled:
            gc.enable()
        gc.unfreeze()
    if answers is None:
        return None
    out = own
    for data in answers:
        got, seen = _loads(data, shared)
        _merge(index, seen)
        out.append(got)
    return out


class _Seen:
    """What a worker's index held when it started: what it read after is told back."""

    def __init__(self, index):
        self.files = set(index.files)
        self.looked = set(index.looked)
        self.bad = set(index.bad)
        self.searched = set(index.searched)
        self.errors = len(index.errors)
        self.rounds = index.grep_rounds

    def since(self, index) -> dict:
        looked = {rel: index.digest_of(src.data) for rel, src in index.files.items() if rel not in self.files}
        looked.update((rel, d) for rel, d in index.looked.items() if rel not in self.looked)
        searched = index.searched - self.searched
        digests: dict = {}
        if index.keep_searched and index.store is not None:  # (taken here, while the parent still works)
            real_dirs: dict = {}
            digests = {rel: index.store.digest_now(rel, real_dirs)
                       for rel in sorted(searched - index.files.keys() - index.looked.keys())}
        return {"looked": looked, "bad": {rel: p for rel, p in index.bad.items() if rel not in self.bad},
                "errors": index.errors[self.errors:], "rounds": index.grep_rounds - self.rounds,
                "searched": sorted(searched), "digests": digests, "asked": index.asked}


def _merge(index, seen: dict) -> None:
    """A worker's reading of the tree, as if this process had read it: the files (their
    digests, for the store), those it could not use, its errors and searches (and the files
    its searches of subsystems' text went through)."""
    for rel, d in seen["looked"].items():
        index.seen_again(rel, d)
        if rel not in index.files:
            index.looked.setdefault(rel, d)
    for rel, problem in seen["bad"].items():
        index.bad.setdefault(rel, problem)
    index.errors.extend(e for e in seen["errors"] if e not in index.errors)
    index.grep_rounds += seen["rounds"]
    index.searched.update(seen["searched"])
    index.searched_digests.update(seen["digests"])
    for part, asked in seen["asked"].items():
        index.asked.setdefault(part, set()).update(asked)


class _Pickler(pickle.Pickler):
    def __init__(self, out, ids: dict):
        super().__init__(out, pickle.HIGHEST_PROTOCOL)
        self.ids = ids

    def persistent_id(self, obj):
        return self.ids.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, shared: Sequence):
        super().__init__(io.BytesIO(data))
        self.shared = shared

    def persistent_load(self, pid):
        return self.shared[pid]


def _dumps(obj, ids: dict) -> bytes:
    out = io.BytesIO()
    _Pickler(out, ids).dump(obj)
    return out.getvalue()


def _loads(data: bytes, shared: Sequence):
    return _Unpickler(data, shared).load()
