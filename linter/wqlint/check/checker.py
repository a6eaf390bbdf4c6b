"""One checker run: the facts, the unit, its scan, and the findings in the original's terms.

What other files contribute (a struct field assigned elsewhere, a wrapper defined in another
file) comes from the tree analysis cached by wqlint.check.facts: a call whose flags or
max_active the unit alone cannot resolve takes the value the tree analysis found at the same
original line, while what the unit does know (the flags as configured, the arguments passed to
a wrapper) stays as configured.
"""
from __future__ import annotations

import os
import re
import time

from wqlint import api, safeio
from wqlint.check import facts as facts_mod, names
from wqlint.check.debug import say
from wqlint.check.errors import CheckError
from wqlint.check.mapping import Mapping, column
from wqlint.check.original import Original
from wqlint.check.preprocess import preprocess
from wqlint.check.unit import Unit
from wqlint.machine import MAX_CPUS, NCPUS
from wqlint.scan.kerneltop import kernel_top

# The names of queues a tree may deprecate: their uses are a second kind of site.
_QUEUES = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(api.DEPRECATED_SYSTEM_QUEUES))) + r")\b")


def kernel_version(root):
    """The tree's Makefile, else (an external module's directory) the version of the kernel
    it is built against, which Kbuild exports as VERSION, PATCHLEVEL, SUBLEVEL, else the
    default."""
    from pathlib import Path

    from wqlint import kversion
    found = kversion.from_makefile(Path(root))
    if found:
        return found
    env = os.environ
    if "srctree" in env and env.get("VERSION", "").isdigit() and env.get("PATCHLEVEL", "").isdigit():
        sub = env.get("SUBLEVEL", "0")
        return int(env["VERSION"]), int(env["PATCHLEVEL"]), int(sub) if sub.isdigit() else 0
    return kversion.DEFAULT_VERSION


class Checker:
    """One invocation: inv (an args.Invocation) in, findings (with the CONFIG_ options they
    hang on) and notes out."""

    def __init__(self, inv, catalogue, kernel_version, ncpus, max_cpus, use_facts) -> None:
        self.inv = inv
        self.catalogue = catalogue
        self.kernel_version = kernel_version
        self.ncpus, self.max_cpus = ncpus, max_cpus
        self.use_facts = use_facts
        self.orig = Original()
        self.notes: list = []

    # -- facts ---------------------------------------------------------------------------------
    def load_facts(self):
        real = os.path.realpath(self.inv.file)
        # The tree the file belongs to: an external module's directory, else the kernel tree
        # holding it (as `wqlint scan` finds it). A loose file has none to take facts from
        # (its directory could be anyone's home).
        self.root = facts_mod.external_module(real) or kernel_top(real)
        if self.root is None:
            self.root, self.use_facts = os.path.dirname(real), False
        self.rel = os.path.relpath(real, self.root)
        # Paths of the tree are shown the way Kbuild named the checked file.
        if self.inv.file.endswith(self.rel) and (len(self.inv.file) == len(self.rel)
                                                  or self.inv.file[-len(self.rel) - 1] == "/"):
            self.shown_root = self.inv.file[:-len(self.rel)]
        else:
            self.shown_root = str(self.root) + "/"
        if not self.use_facts:
            return None
        try:
            return facts_mod.obtain(self.root, facts_mod.cache_dir(self.inv.file, self.root),
                                    self.inv.file, debug=say)
        except facts_mod.FactsError as exc:
            self.notes.append(f"{exc}: values from other files are not used")
            return None
        except Exception as exc:  # a checker must not break the build over its own analysis
            self.notes.append(f"the tree analysis failed ({type(exc).__name__}: {exc}): values from "
                              "other files are not used")
            return None

    def shown(self, rel: str) -> str:
        return rel if rel.startswith("<") else os.path.normpath(self.shown_root + rel)

    # -- the run ---------------------------------------------------------------------------------
    def run(self):
        """(findings, notes)."""
        if not os.path.isfile(self.inv.file):
            raise CheckError("no such file")
        if os.path.getsize(self.inv.file) > safeio.MAX_SOURCE_BYTES:  # as scan refuses it, before cpp reads it
            raise CheckError(f"larger than {safeio.MAX_SOURCE_BYTES // (1024 * 1024)} MiB, not read")
        started = time.monotonic()
        facts = self.load_facts()
        say(f"facts ready after {time.monotonic() - started:.3f} s")
        mention = facts.mention_re() if facts is not None else facts_mod.mention_re(())
        mention = re.compile(mention.pattern + "|" + _QUEUES.pattern)
        # -dD (which macro definition was live, what each CONFIG_ option is) costs a fifth
        # of the preprocessing: asked for only when the file can have something to report.
        likely = ((facts is not None and facts.has_sites(self.rel))
                  or facts_mod.mentions(self.inv.file, mention, unreadable=True))
        unit = Unit(preprocess(self.inv, directives=likely), directives=likely)
        say(f"preprocessed after {time.monotonic() - started:.3f} s")
        own = unit.own_text(self.inv.file)
        if not (mention.search(own) or (facts is not None and facts.has_sites(self.rel))):
            say("no allocation in the unit: not scanned")
            return [], list(self.notes)
        if not unit.directives:  # an allocation only the expansion shows (rare): again, with -dD
            unit = Unit(preprocess(self.inv))
        from wqlint import tools

        with tools.temp_dir("wqlint-check-") as workdir:
            got = self.scan(unit, facts, workdir)
        say(f"scanned after {time.monotonic() - started:.3f} s")
        return got

    def scan(self, unit: Unit, facts, workdir):
        from wqlint.checks import judge
        from wqlint.checks.context import make_context
        from wqlint.scan.engine import Engine, ScanOptions
        from wqlint.scan.targets import Targets

        self.unit = unit
        unit_dir = os.path.join(workdir, "unit")
        os.mkdir(unit_dir)
        self.unit_rel = os.path.basename(self.inv.file)
        self.map = Mapping(unit, self.orig, self.inv.file, self.unit_rel)
        data = unit.code.encode("utf-8", "replace")
        with open(os.path.join(unit_dir, self.unit_rel), "wb") as handle:
            handle.write(data)
        version = self.kernel_version or kernel_version(self.root)
        eng = self.engine = Engine(Targets([os.path.join(unit_dir, self.unit_rel)]), self.catalogue,
                                   ScanOptions(kernel_version=version, ncpus=self.ncpus, max_cpus=self.max_cpus,
                                               preloaded={self.unit_rel: data}))
        say("scanner ready")
        sites = eng.sites()
        say(f"{len(sites)} sites in the unit")
        for e in eng.errors:
            if e.path == self.unit_rel:  # the checked file itself was not analysed (too many calls)
                raise CheckError(e.problem)
        try:
            tree_sites = facts.sites(self.rel, self.shown) if facts is not None else []
        except facts_mod.FactsError as exc:
            self.notes.append(f"{exc}: values from other files are not used")
            tree_sites = []
        out = self.unit_sites(sites, tree_sites)
        done = {s.line for s in out}
        for t in tree_sites:
            if t.line in done or not t.via:
                continue  # the unit saw this call, or it is not through a wrapper it lacks
            site = self.through_wrapper(t)
            if site is not None:
                out.append(site)
        errors = [str(e) for e in list(eng.errors) + list(eng.index.errors)
                  if e.path != self.unit_rel and not e.path.endswith("/" + self.unit_rel)]
        out += self.queue_uses(workdir, version)
        if not out:
            return [], list(self.notes) + errors
        api_files = eng.api_files
        if self.unit_rel in api_files or _defines_entry_point("\n".join(self.orig.lines(self.inv.file))):
            # the checked file defines the API (kernel/workqueue.c), under the paths its sites carry
            api_files |= {self.rel} | {s.path for s in out if s.path == self.rel
                                       or s.path.endswith(os.sep + self.rel)}
        header = self.api_header()
        tree_api = eng.api_facts(bits=eng.bits(self.unit_rel) if b"WQ_UNBOUND" in data else None,
                                 api_header=header,
                                 header_text="\n".join(self.orig.lines(header)).encode() if header else None,
                                 api_files=api_files)
        ctx = make_context(self.catalogue, tree_api, self.ncpus, self.max_cpus)
        findings = judge(out, ctx)
        say(f"{len(findings)} findings")
        return self.with_configuration(findings, out), list(self.notes) + errors

    def queue_uses(self, workdir, version) -> list:
        """The checked file's uses of a deprecated system queue (QueueUse), found in its source
        as `scan` finds them, on the lines this configuration compiles. (In the unit, macros
        such as flush_workqueue() no longer show the call the source writes.)"""
        from dataclasses import replace

        from wqlint.scan.engine import Engine, ScanOptions
        from wqlint.scan.targets import Targets
        text = "\n".join(self.orig.lines(self.inv.file))
        if not _QUEUES.search(text):
            return []
        src_dir = os.path.join(workdir, "source")
        os.mkdir(src_dir)
        path = os.path.join(src_dir, self.unit_rel)
        data = text.encode("utf-8", "surrogateescape")
        with open(path, "wb") as handle:
            handle.write(data)
        eng = Engine(Targets([path]), self.catalogue,
                     ScanOptions(kernel_version=version, preloaded={self.unit_rel: data}))
        shown = self.shown(self.rel)
        out = []
        for use in eng.uses():
            # compiled: a unit line holds what the line became (a line an #if leaves out is
            # an empty line of the unit)
            if any(self._unit_line(n).strip() for n in self.unit.lines_of(self.map.is_main, use.line)):
                out.append(replace(use, path=shown, step=replace(use.step, path=shown)))
        say(f"{len(out)} uses of deprecated system queues compiled")
        return out

    def unit_sites(self, sites, tree_sites) -> list:
        """The unit's sites in the checked file, in the original's terms: each at the name
        written on its line, with the tree analysis' values where the unit cannot resolve
        them. One site per call (alloc_hooks() expands its argument three times)."""
        from dataclasses import replace

        from wqlint.scan.values import has_unknown

        by_place: dict = {}
        for s in tree_sites:
            by_place.setdefault((s.line, s.col), []).append(s)
        shown_main = self.shown(self.rel)
        out, seen = [], set()
        for s in sites:
            at = self.map.back(s.path, s.line)
            if at is None or not self.map.is_main(at[0]):
                continue  # a header's allocation: reported where the header is checked, not here
            if any(name in names.FUNCTIONS for name in s.via):
                continue  # the API's own definition, through a helper of kernel/workqueue.c
            path, line = at
            written = self.map.written(path, line, s.line, s.entry)
            # (Two allocations on one line through different macros are taken as the first.)
            w = next((x for x in written if x.name == s.entry), written[0] if written else None)
            col = w.col if w else column(self._unit_line(s.line), s.col, self.orig.line(path, line))
            entry = (w.wrappers[0][0] if w and w.wrappers else w.entry) if w else s.entry
            key = (line, col, entry, tuple(s.via))
            if key in seen:
                continue
            seen.add(key)
            tree = next((t for t in by_place.get((line, col), []) if t.entry == entry), None)
            site = replace(s, path=shown_main, line=line, col=col, end_col=tree.end_col if tree else 0,
                           flags=self.map.value(s.flags), max_active=self.map.value(s.max_active),
                           prefix=[self.map.step(p) for p in s.prefix])
            if w is not None and w.wrappers:
                # Called through macros the unit no longer shows (create_workqueue()): the
                # site is theirs, as a scan of the sources sees it.
                if tree is not None:
                    site.entry, site.via, site.prefix = tree.entry, list(tree.via), list(tree.prefix)
                    site.flags_arg, site.max_active_arg = tree.flags_arg, tree.max_active_arg
                else:
                    site.entry, site.via = entry, [m for m, _ in w.wrappers] + list(s.via)
                    site.prefix = self.macro_steps(path, line, w, s.entry, site.prefix)
                    site.flags_arg = site.max_active_arg = -1
            elif w is not None and w.entry != s.entry:
                site.entry = w.entry  # alloc_workqueue(), which the unit calls by its _noprof name
                site.prefix = [self.renamed(p, s.entry, w.entry) for p in site.prefix]
            if tree is not None:
                # What the unit cannot resolve (a field assigned in another file, a macro
                # expanded past what resolution reads) is taken as the tree resolved it.
                if has_unknown(s.max_active):
                    site.max_active = tree.max_active
                    say(f"line {line}: max_active from the tree analysis")
                elif self._same_values(site.max_active, tree.max_active):
                    # The same whatever the machine, and the tree's chain is in the words of
                    # the source: num_possible_cpus(), not what this configuration expands
                    # it to (cpumask_weight(((const struct cpumask *)&__cpu_possible_mask))).
                    site.max_active = tree.max_active
                if has_unknown(s.flags):
                    site.flags = tree.flags
                    say(f"line {line}: flags from the tree analysis")
            out.append(site)
        return out

    def macro_steps(self, path, line, written, called, prefix) -> list:
        """The chain of a call through macros, without the tree analysis: a step for each
        macro, where it is used, then the unit's own steps with the call of the API's entry
        point placed in the last macro's #define."""
        from dataclasses import replace

        from wqlint.finding import Step
        steps, at = [], (path, line)
        for macro, define in written.wrappers:
            steps.append(Step(at[0], at[1], self.orig.line(*at).strip(), f"calls {macro}()"))
            at = define
        inner = [self.renamed(p, called, written.entry) for p in prefix]
        if inner and at != (path, line):
            inner[-1] = replace(inner[-1], path=at[0], line=at[1], text=self.orig.line(*at).strip())
        return steps + inner

    @staticmethod
    def renamed(step, called: str, entry: str):
        """The unit's step of the call of `called` (alloc_workqueue_noprof(flags ..., ...)),
        named as the source calls it (alloc_workqueue)."""
        from dataclasses import replace
        if called == entry or not step.note.startswith(called + "("):
            return step
        return replace(step, note=entry + step.note[len(called):])

    def with_configuration(self, findings, sites) -> list:
        """The findings, each saying which CONFIG_ options it hangs on, as this build has them."""
        from dataclasses import replace

        from wqlint.check.config import configuration
        from wqlint.finding import Step
        at: dict[tuple[int, int], object] = {}
        for site in sites:
            at.setdefault((site.line, site.col), site)
        out = []
        for f in findings:
            site = at.get((f.line, f.col))
            configs, steps = configuration(site, self.unit, self.orig, self.map, self.api_header()) \
                if site is not None else ([], [])
            if configs:
                f = replace(f, message=f"{f.message} (with {', '.join(configs)})",
                            chain=f.chain + tuple(Step(p, ln, self.orig.line(p, ln).strip(), note)
                                                  for p, ln, note in steps))
            out.append(f)
        return out

    def _unit_line(self, n: int) -> str:
        src = self.engine.index.source(self.unit_rel)
        return src.line_text(n) if src is not None else ""

    def api_header(self):
        """Where the unit's workqueue API came from: the API's own CPU counts and #ifs are not
        the caller's."""
        from wqlint.scan.treeapi import API_HEADER  # (loaded by the scan already)
        if not hasattr(self, "_api"):
            self._api = next((os.path.normpath(n) for n in self.unit.files() if n.endswith(API_HEADER)), None)
        return self._api

    @staticmethod
    def _same_values(a, b) -> bool:
        from wqlint.scan.values import cpu_path, evaluate
        if (cpu_path(a) is None) != (cpu_path(b) is None):
            return False
        for n in (3, 96, 1000):
            va, ca = evaluate(a, n)
            vb, cb = evaluate(b, n)
            if not (ca and cb and va and va == vb):
                return False
        return True

    # -- a wrapper defined in another file -------------------------------------------------------
    def through_wrapper(self, tree_site):
        """A call of a wrapper the unit does not know (defined in another file), as the tree
        analysis resolved it, with the arguments the unit passes resolved as configured.
        None when the configuration leaves the call out."""
        from dataclasses import replace

        from wqlint.scan import parser
        from wqlint.scan.scope import calls_named, scope_of
        from wqlint.scan.values import Alt, fold, has_unknown, rebuilt

        wrapper = tree_site.via[0]
        src = self.engine.index.source(self.unit_rel)
        if src is None:
            return None
        found = None
        for n in self.unit.lines_of(self.map.is_main, tree_site.line):
            calls = calls_named(src.chunk_at(n), wrapper, n)
            if calls:
                found = (src.chunk_at(n), calls[0])
                break
        if found is None:
            return None  # not in this configuration
        chunk, call = found
        args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        scope = scope_of(chunk, call)
        resolver = self.engine.resolver
        values = []
        for _ in range(6):
            resolver.new_round()
            resolver.start(self.unit_rel)
            values = [resolver.resolve(a, scope) for a in args]
            if not self.engine.index.fetch_pending():
                break
        values = [self.map.value(v) for v in values]
        shown_main = self.shown(self.rel)

        def bound(v, kids):
            """The tree's value with the wrapper's arguments at this call as configured."""
            st = v.step
            if isinstance(v, Alt) and st is not None and st.binds and st.binds[0] == wrapper \
                    and st.path == shown_main and st.line == tree_site.line:
                i = st.binds[1]
                if i < len(values) and not has_unknown(values[i]):
                    return Alt(st, (values[i],), v.why, mark=v.mark)
                return v
            return rebuilt(v, st, tuple(kids))

        def rebind(v):
            return fold(v, lambda leaf: leaf, bound)
        say(f"line {tree_site.line}: {wrapper}() from the tree analysis, "
            f"arguments as configured: {[parser.text(a) for a in args]}")
        return replace(tree_site, flags=rebind(tree_site.flags), max_active=rebind(tree_site.max_active))


def check(inv, catalogue, kernel_version=None, ncpus=NCPUS, max_cpus=MAX_CPUS, use_facts=True):
    """(findings for inv.file, the problems worth a line of their own)."""
    return Checker(inv, catalogue, kernel_version, ncpus, max_cpus, use_facts).run()


# A definition of one of the API's allocation functions: its body follows the parameter list.
_ENTRY_DEFINITION_RE = re.compile(r"^(?:[A-Za-z_][\w \t*]*[ \t*])?(?:" + "|".join(re.escape(n) for n in api.SINKS)
                                  + r")\s*\([^;{}]*\)\s*\{", re.M)


def _defines_entry_point(text: str) -> bool:
    """Does the checked file define one of the API's allocation functions? Then it is the
    API's own code, as the scan finds it in the tree."""
    return _ENTRY_DEFINITION_RE.search(text) is not None
