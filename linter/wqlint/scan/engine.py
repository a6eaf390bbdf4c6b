"""The tree-sitter engine: what to scan, the sites found there, resolved, then judged.

The engine drives the parts, a round of searches of the tree at a time: scan.targets (what
to scan), scan.treeapi (the API as the tree has it), scan.sites (allocations, through their
wrappers), scan.uses (uses of deprecated system queues), scan.work (work items reaching a
flush), scan.suppress (suppression comments); the rules judge what they found.
"""
from __future__ import annotations

import dataclasses
import gc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from wqlint import api
from wqlint.finding import InputError, Report
from wqlint.scan.cpp import Decider
from wqlint.scan.description import Description, kept_same
from wqlint.scan.index import TreeIndex
from wqlint.scan.treefiles import TreeFiles
from wqlint.scan.options import ScanOptions
from wqlint.scan.phases import timed
from wqlint.scan.resolve import Resolver
from wqlint.scan.site import ApiFacts, FlagBits
from wqlint.scan.sites import SiteFinder
from wqlint.scan.source import call_digest
from wqlint.scan.suppress import suppressions
from wqlint.scan.targets import Focus, Targets, UsageError
from wqlint.scan.treeapi import TreeApi, declared_queues, helper_queues, kernel_api
from wqlint.scan.uses import QueueUses
from wqlint.scan.values import evaluate
from wqlint.scan.assumed import unblocked
from wqlint.scan.calls import far_files
from wqlint.scan.cancels import Cancels
from wqlint.scan import parser, shares
from wqlint.scan.subtext import prefetch_files_heads, questions_of, questions_text
from wqlint.scan.work import WorkModel

if TYPE_CHECKING:
    from wqlint.scan.store import Analysis, Store

__all__ = ["Engine", "ScanOptions", "ScanResult", "UsageError"]

MAX_ROUNDS = 12  # searches of the tree, each for the names the round before found wanting


@dataclass(frozen=True)
class ScanResult:
    """What a scan gives back (Engine.run())."""

    report: Report
    sites: list  # the allocation sites of the targets, as they were judged (Site)
    context: Any  # what they were judged with (wqlint.checks.context): the tree's API facts, the machine
    searched_all: bool  # the searches of the tree read every file they met (its index may be kept)
    read: dict = dataclasses.field(default_factory=dict)  # rel -> digest of the bytes judged (None: no store)


class Engine:
    """A scan of the targets, as the options say: run() resolves their sites and judges them.
    Nothing is set on an engine once it is made."""

    def __init__(self, targets: Targets, catalogue, options: ScanOptions):
        """UsageError when a --kernel-tree is given for paths inside another kernel tree."""
        self.targets = targets
        self.catalogue = catalogue
        self.options = options
        self.root = targets.root
        self.errors = targets.errors  # the input errors met, in order (the targets' first)
        self.focus = Focus(options.focus, options.focus_words)
        chosen = kernel_api(self.root, targets.paths[0], options.kernel_tree, options.kernel_version)
        self.notes = targets.notes + list(chosen.notes)
        self._model: Optional[WorkModel] = None  # _work_model()
        self._questions: dict = {}  # what the work model asked in the scan kept before (analysis())
        self.version, self.version_source = chosen.version, chosen.version_source
        self.api_header = chosen.header
        store: Optional[Store] = None
        if isinstance(options.store, bool):
            if options.store and chosen.kernel is None:
                from wqlint.scan.store import Store
                store = Store(self.root).open(options.jobs)
        elif chosen.kernel is None:
            store = options.store
        self.store = store
        self.index = TreeIndex(self.root, options.jobs, chosen.extra, preloaded=options.preloaded,
                               kernel=chosen.kernel, files=options.files, store=store)
        self.cpp = Decider(self.index, self.version)
        self.resolver = Resolver(self.index, self.cpp)
        self.cpp.build_dirs = targets.build_dirs()
        self.api = TreeApi(self.index, self.resolver, chosen)
        self.description = Description(self.index)  # the tree's tables and functions (scan.work's)
        self.finder = SiteFinder(self.index, self.resolver, self.cpp, targets, self.focus, store, self.api_header)

    @property
    def api_files(self) -> frozenset:
        """The files found to define an entry point of the API (an entry point calls another)."""
        return frozenset(self.finder.api_files)

    @timed("resolution")
    def sites(self) -> list:
        """Every allocation site reachable from the paths, resolved but not yet judged."""
        self.targets.check_named_files(self.index.preloaded)
        self.api.prefetch()
        sites = []
        # The tree's description is searched beside the resolution, once the first round's
        # search is answered: the resolution waits for that round (on 2 cores,
        # linux-source-6.12's took 4 s beside the description's searches, 1.5 s without).
        # With an index read from disk, before it: the index answers that round, whose
        # resolution then takes seconds with no search of the tree beside it.
        describe = self._describes()
        if describe and self.store is not None and self.store.loaded:
            self.description.start()
        for rnd in range(MAX_ROUNDS):
            self.resolver.new_round()
            sites = self.finder.find()
            if self.options.progress:
                self.options.progress(f"round {rnd + 1}: {len(sites)} allocation sites, "
                                      f"{len(self.index.pending)} names to look up")
            fetched = self.index.fetch_pending()
            if rnd == 0 and describe:
                self.description.start()  # (once: a second call does nothing)
            if not fetched:
                break
        self.api.warm_bits()
        return sites

    @timed("resolution")
    def uses(self) -> list:
        """The QueueUse sites of the targets, without resolving allocations."""
        header = self.index.source(self.api_header)
        return QueueUses(self.index, self.resolver.macros, self.cpp, self.targets, self.focus,
                         helper_queues(header.data if header is not None else b"", self.api_header)).find(MAX_ROUNDS)

    def bits(self, near: Optional[str] = None) -> FlagBits:
        """The WQ_* values as the API header defines them (or as the file near sees them)."""
        return self.api.bits(near)

    @timed("work model")
    def _works(self, sites, bits) -> tuple:
        """(flows, waits): the work items put on queues allocated with api.RESCUER_FLAG whose
        functions reach a flush, and the works that wait for themselves at the waits in the
        paths (scan.work, scan.selfwait), looked up round by round like the sites' values."""
        rescuer = bits.bit(api.RESCUER_FLAG)
        flows_on = bool(rescuer) and "flow" not in self.options.unread
        if not flows_on and "wait" in self.options.unread:
            return [], []
        model = self._work_model(sites)

        # (both asked again in every round: of each site, and of the file of each of the tree's waits)
        wanted = _memo(id, lambda site: self.targets.holds(site.path) and not self.focus.outside(site.path)
                       and _may_have(site, rescuer))
        waits_of = _memo(str, lambda rel: self.targets.holds(rel) and not self.focus.outside(rel))
        # The model makes hundreds of thousands of small objects (the subsystems' headers, the
        # callees of each body) while the scan's own are alive: the collector's passes over
        # those cost about 0.2-0.4 s of CPU on linux-source-6.12 (of some 3 s for the model).
        # They are set aside while it runs; nor are the model's own collected while it runs
        # (they are its answers, kept to its end, with few cycles among them: the peak of a
        # cold whole-6.12 scan is the same, and its passes over them took 0.1-0.2 s more).
        enabled = gc.isenabled()
        gc.freeze()
        gc.disable()

        def rounds(want) -> list:
            got: list = []
            for _ in range(MAX_ROUNDS):
                misses = self.index.misses
                got = model.flows(want)
                # (a round that ran out of text searches goes on, with or without new names)
                if (self.index.misses == misses or not self.index.fetch_pending()) and not model.text.wanting():
                    break
            return got
        try:
            flows, waits = shares.work(self.index, model, wanted if flows_on else None,
                                       None if "wait" in self.options.unread else waits_of, self.options.jobs, rounds)
        finally:
            if enabled:
                gc.enable()
            gc.unfreeze()
        if flows:
            model.paths_done()
            self.index.release_sources()  # (the cancels of the flows' works read few files)
        return Cancels(model).with_cancels(flows) if flows else flows, waits

    def _prefetch_far(self) -> None:
        """The search of the functions of the files that flush (scan.calls.far_files()), which the
        work model asks first, started before the sites are resolved: known from the index,
        it then runs beside them. Started only where it is shared (a review's two scans:
        tools.shared_searches()); on linux-source-7.3 it takes some 0.12 s."""
        files = far_files(self.index)
        if files is not None:
            prefetch_files_heads(self.index, files)

    def _work_model(self, sites) -> WorkModel:
        """The one work model of a scan (scan.work): the searches and answers of the flows'
        rules serve the waits' too."""
        if self._model is None or self._model.sites is not sites:
            header = self.index.source(self.api_header)
            self._model = WorkModel(self, sites, helper_queues(header.data if header is not None else b"",
                                                               self.api_header), self._questions)
        return self._model

    def api_facts(self, bits: Optional[FlagBits] = None, api_header: Optional[str] = None,
                  header_text: Optional[bytes] = None, api_files: Optional[frozenset] = None) -> ApiFacts:
        """What the tree says of the API, for the rules' context (wqlint.checks.context).
        header_text: the API header's text when it is not a file of the scanned tree (the
        header a checked unit was preprocessed with); api_files: the files defining the API,
        when not those the scan found (self.api_files)."""
        bits = bits or self.api.bits()
        if header_text is None:
            header = self.index.source(api_header or self.api_header)
            header_text = header.data if header is not None else b""
        name_len, warns, where = self.api.name_len()
        header_rel = api_header or self.api_header
        return ApiFacts(self.version, self.version_source, bits, api_header=header_rel,
                        declared=declared_queues(header_text),
                        api_files=self.api_files if api_files is None else api_files,
                        name_len=name_len, name_warns=warns, name_len_step=where,
                        helper_queues=helper_queues(header_text, header_rel))

    def _describes(self) -> bool:
        """Does the scan search the tree's description while it resolves its sites? The work
        model of a whole tree reads it (for the flows and for the waits); a review's focus on a
        few files seldom needs it, and a search of the whole tree for each patch would cost it
        several times its own work."""
        return "" in self.targets.rels and self.focus.files is None and not {"flow", "wait"} <= self.options.unread

    def _searched(self) -> int:
        """How many .c/.h files the search of the targets covers. It skips hidden directories
        (.tmp_versions, a vendor's .foo/): a note names them, once, rather than scan less than
        was asked without a word."""
        hidden, count = self.targets.searched(self.store)
        if hidden:
            more = f" and {len(hidden) - 3} more" if len(hidden) > 3 else ""
            self.notes.append(f"hidden directories are not searched: {', '.join(sorted(hidden)[:3])}{more}")
        return count

    def analysis(self) -> Analysis:
        """The sites of the paths, resolved but not judged, and what they came from. Taken
        from the store when nothing they depend on changed since they were kept."""
        from wqlint.scan.store import Analysis

        key = self._scan_key()
        works = not {"flow", "wait"} <= self.options.unread  # (the work model reads the description)
        if self.store is not None and key is not None and self.store.unread and works \
                and not kept_same(self.store, self.store.unread):
            self.store.stale()
        kept = self.store.scan(key) if self.store is not None and key is not None else None
        if self.store is not None and kept is not None:
            self.targets.check_named_files(self.index.preloaded)
            if self.options.save_store and self.store.unsaved:  # new stamps (a touched file), the scan's use
                self.store.save()
            return kept
        # Searched with the first round of sites(): the uses of the system queues, and the
        # callers of the API's macros (each a wrapper whose callers are the allocations),
        # which would otherwise cost a second pass over the tree once their #define is read.
        # With the rules of work items on, the flushes too (the files where scan.work looks
        # for a callee its caller's subsystem does not define).
        for name in list(api.DEPRECATED_SYSTEM_QUEUES) + [e.name for e in api.ENTRIES] + (
                [] if "flow" in self.options.unread else [c.name for c in api.FLUSH_CALLS]) + (
                [] if "wait" in self.options.unread else list(api.SELF_WAITS)):
            self.index.occurrences(name)
        if works and self.focus.files is not None:
            self._prefetch_far()
        if works and key is not None and self.store is not None:
            # (the scan of these paths kept before, no longer of the tree: its questions)
            self._questions = questions_of(self.store.questions(key) or "{}")
        sites = self.sites()
        bits = self.api.bits()
        uses = self.uses()
        # The digest of each reported call's text (Finding.call_sha), from the files in memory
        # now: a scan taken from the store then reads none of them again.
        call_sha = {}
        for s in list(sites) + list(uses):
            src = self.index.files.get(s.path)
            if src is not None and self.targets.holds(s.path) and (s.path, s.line, s.col) not in call_sha:
                call_sha[(s.path, s.line, s.col)] = call_digest(src, s.line, s.col)
        self.index.keep_searched = self.store is not None and key is not None
        if works:
            # The work model reads what it needs again, a bounded number of files at a time
            # (a worker forked for the waits shares what this process holds when it starts:
            # keeping the sites' directories cost both some 70 MB on linux-source-7.3).
            self.index.release_sources()
            self.index.bound_sources()
        flows, waits = self._works(sites, bits)
        flows = unblocked(flows, waits)
        read: dict[str, Optional[str]] = {rel: None for rel in self.index.files if not rel.startswith("<")}
        read.update((rel, None) for rel in self.index.bad)
        read.update((rel, None) for rel in self.index.looked if not rel.startswith("<"))
        searched: dict = {}
        if self.store is not None:
            from wqlint import safeio
            from wqlint.scan.source import MAX_FILE_BYTES
            from wqlint.scan.store import digest
            for rel in read:
                src = self.index.files.get(rel)
                if src is not None:
                    read[rel] = digest(src.data)
                elif rel in self.index.looked:
                    read[rel] = self.index.looked[rel]
                else:  # a file the scan could not use (binary, too large, not a regular file)
                    try:
                        read[rel] = digest(safeio.read_bytes(self.root / rel, MAX_FILE_BYTES, self.root))
                    except safeio.InputRefused:
                        read[rel] = ""
                if rel in self.index.changed:
                    read[rel] = ""  # other bytes when read again: not judged whole
            if key is not None:
                # The files the work model's searches of subsystems went through without
                # reading them: one that defines a function now may be a step of a path.
                real_dirs: dict = {}
                for rel in sorted(self.index.searched - read.keys()):
                    got = self.index.searched_digests.get(rel)
                    searched[rel] = got if got is not None else self.store.digest_now(rel, real_dirs)
        if self._model is not None:
            # Nothing reads the work model or the files it read again: let go of them before
            # the index is encoded and the report written (the scan's peak memory came
            # there, on linux-source-7.3 some 80 MB above the model's end).
            self._model = None
            self.index.release_sources()
        result = Analysis(sites=sites, uses=uses, flows=flows, waits=waits, bits=bits, bad=dict(self.index.bad),
                          errors=list(self.index.errors), parse_errors=dict(self.finder.parse_errors),
                          call_sha=call_sha, api_files=self.api_files, read=read, searched=searched)
        if self.store is not None and not self.index.errors:
            if key is not None:
                self.store.keep_scan(key, result, questions_text(self.index.asked))
            if self.options.save_store:
                self.store.save()
        return result

    def run(self, judge, make_context) -> ScanResult:
        """The scan of the paths: their sites as resolved, judged by judge(sites, context)
        -> findings in the rules' context make_context(catalogue, ApiFacts, ncpus, max_cpus)
        (wqlint.checks.judge, wqlint.checks.context.make_context: the scanner resolves and
        reports what the tree says of the API, the rules build their context and judge)."""
        got = self.analysis()
        searched = self._searched()  # after the search: the directories are in the page cache
        sites = [s for s in got.sites if self.targets.holds(s.path)]
        # (the files defining the API are kept with the sites: a stored scan walks none)
        context = make_context(self.catalogue, self.api_facts(got.bits, api_files=got.api_files),
                               self.options.ncpus, self.options.max_cpus)
        # A flow is the work's as much as the flush's: reported when the flush is scanned, or
        # where the work is bound to its function or queued (a driver's scan shows its work
        # reaching a transport's flush; a scan of the file allocating a shared reclaim queue
        # does not show every work other files put on it).
        flows = [f if self.targets.holds(f.path) else dataclasses.replace(f, elsewhere=True)
                 for f in got.flows if self.targets.holds(f.path) or self.targets.holds(f.bound.path)
                 or self.targets.holds(f.queued.path)]
        findings = [self._with_call_sha(f, got.call_sha) for f in judge(sites + got.uses + flows + got.waits, context)]
        errors = list(self.errors) + list(got.errors)
        for rel, problem in sorted(got.bad.items()):
            if self.targets.holds(rel):
                errors.append(InputError(rel, problem))
        for rel, problem in sorted(got.parse_errors.items()):
            if self.targets.holds(rel):
                errors.append(InputError(rel, problem))
        report = Report(root=str(self.root), findings=findings, errors=self.targets.one_per_file(errors),
                        notes=self.notes, kernel_version=self.version, kernel_version_source=self.version_source,
                        files_scanned=searched)
        report.grep_rounds = self.index.grep_rounds
        if self.options.keep_suppressed:
            report.suppressed = suppressions(sites + got.uses, judge, context, self.index)
        parser.forget()  # (the trees' matches: the next scan's are its own)
        return ScanResult(report, sites, context, searched_all=not self.index.errors, read=got.read)

    def _scan_key(self):
        """Under which key a scan's sites are kept in the store; None when they are not (no
        store, or files in memory: a review's patched files, a checker's unit). wqlint's own
        description of the API follows the kernel version: its digest is part of the key."""
        if self.store is None or self.focus.files is not None or self.index.preloaded \
                or any(not rel.startswith("<") for rel in self.index.extra) \
                or type(self.index.tree_files) is not TreeFiles:
            return None
        from wqlint.scan.store import digest
        own = tuple(sorted((rel, digest(data)) for rel, data in self.index.extra.items()))
        # The version too: paths through #if branches follow the target kernel (scan.cpp).
        return ("scan", tuple(sorted(self.targets.rels)), self.api_header, own, tuple(self.version),
                tuple(sorted(self.options.unread)))

    def _with_call_sha(self, f, known: Optional[dict] = None):
        digest = (known or {}).get((f.path, f.line, f.col))
        if digest is None:
            src = self.index.source(f.path)
            digest = call_digest(src, f.line, f.col) if src is not None else ""
        return dataclasses.replace(f, call_sha=digest) if digest else f


def _may_have(site, bit: int) -> bool:
    """May the site's flags hold bit (a value of theirs that has it)? Never for bit 0 (a flag
    the tree's API does not define)."""
    return bool(bit) and any(v & bit for v in evaluate(site.flags, 1)[0])


def _memo(key, ask):
    """ask(x), worked out once for each key(x)."""
    known: dict = {}

    def asked(x):
        k = key(x)
        got = known.get(k)
        if got is None:
            got = known[k] = ask(x)
        return got
    return asked
