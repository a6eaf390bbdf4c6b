"""`wqlint check`: a checker for the kernel build (`make C=1 CHECK="wqlint check"`).

Kbuild runs `$(CHECK) $(CHECKFLAGS) $(c_flags) file.c`. The file is preprocessed under those
flags, so every macro, enumerator and `#if` is what the configuration being built makes it, and
the scanner runs on that translation unit. Findings are mapped back to the original file and
line and printed on stderr in sparse's format.

sparse decides the configuration: its predefined macros for the flags given (`--arch=`, `-m64`,
`-D`, `-U`, `-O2`, `__CHECKER__`...) are taken from `sparse -E -dM` on an empty file (a few
milliseconds). `sparse -E` itself writes no line markers, so the text is expanded by
`cpp -undef` with exactly those macros, which keeps the `# N "file"` markers that lead each line
back to where it was written, and with `-dD`, which leaves every `#define` and `#undef` in place:
that tells which definition of a macro was live and what each CONFIG_ option is in this build.

What other files contribute (a struct field assigned elsewhere, a wrapper defined in another
file) comes from the tree analysis cached by wqlint.facts: a call whose flags or max_active the
unit alone cannot resolve takes the value the tree analysis found at the same original line,
while what the unit does know (the flags as configured, the arguments passed to a wrapper)
stays as configured.

A finding whose flags or max_active depend on an `#if` on a CONFIG_ option (around the call,
a step of its chain, or the live definition of a macro they use) says so: "(with CONFIG_X=y)",
"(with CONFIG_X not set)".
"""
from __future__ import annotations

import bisect
import os
import re
import subprocess
import sys
import time

# Imports are few and cheap here: Kbuild starts the checker once per file, and most files
# end before any scan (the scanner, dataclasses, pathlib, tempfile come in only then).

# Options that take a value, either joined (-DX, -Idir) or as the next argument (-D X, -I dir).
_VALUED = ("-D", "-U", "-I", "-include", "-imacros", "-isystem", "-iquote", "-idirafter")
# Options given to `sparse -E -dM` to learn the predefined macros of the configuration.
_SPARSE_ONLY = re.compile(r"^(--arch=.*|-m(32|64|x32|big-endian|little-endian|cmodel=.*)|-O.*|-std=.*|"
                          r"-f(un)?signed-char|-fshort-wchar)$")
# Macros cpp provides itself and refuses to see redefined.
_BUILTIN = re.compile(r"^#define (__STDC__|__STDC_HOSTED__|__STDC_VERSION__|_Pragma|__FILE__|__LINE__|"
                      r"__DATE__|__TIME__|__COUNTER__|__has_\w+|__INCLUDE_LEVEL__|__BASE_FILE__)\b")
_PREDEF = re.compile(r"^#define ([A-Za-z_]\w*(?:\([^)]*\))?) ?(.*)$")
_MARKER = re.compile(r'\n# (\d+) "([^"\\\n]*(?:\\.[^"\\\n]*)*)"[^\n]*')
_NEXT_MARKER = re.compile(r'\n# \d+ "')
_DEFINED_NAME = re.compile(r"\n#define ([A-Za-z_]\w*)")
_DIRECTIVE = re.compile(r"\n#[^\n]*")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_SINK_CALL = re.compile(r"\b(?:alloc_workqueue|alloc_workqueue_lockdep_map|__alloc_workqueue)\s*\(")
_PP_COND = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")
_CONFIG = re.compile(r"\bCONFIG_\w+")
_ARG_NOTE = re.compile(r"^'\w+' <- argument (\d+) '.*' of (\w+)\(\)$", re.S)
# Names the configuration cannot turn into something else as far as the rules go.
_LEAVES = frozenset({"num_online_cpus", "num_possible_cpus", "num_present_cpus", "num_active_cpus",
                     "nr_cpu_ids", "NR_CPUS", "alloc_workqueue", "alloc_workqueue_lockdep_map"})
TIMEOUT = 300


class CheckError(Exception):
    """Printed as one line, and the checker exits non-zero."""


class Invocation:
    def __init__(self, file: str, defines=(), includes=(), sparse=(), all_args=()):
        self.file = file
        self.defines = list(defines)  # -D/-U, in order, as cpp options
        self.includes = list(includes)  # -I/-include/-isystem/... and -nostdinc
        self.sparse = list(sparse)  # options that shape sparse's predefined macros
        self.all_args = list(all_args)  # everything, for --also-sparse


def parse_args(args: list) -> Invocation:
    """What Kbuild passes a checker. Unknown options are accepted and ignored."""
    files, defines, includes, sparse = [], [], [], []
    i = 0
    while i < len(args):
        a = args[i]
        opt = next((o for o in _VALUED if a == o or (a.startswith(o) and o in ("-D", "-U", "-I"))), None)
        if opt:
            if a == opt:
                if i + 1 >= len(args):
                    raise CheckError(f"option {opt} needs a value")
                value = args[i + 1]
                i += 1
            else:
                value = a[len(opt):]
            (defines if opt in ("-D", "-U") else includes).extend([opt, value])
        elif a == "-nostdinc":
            includes.append(a)
        elif _SPARSE_ONLY.match(a):
            sparse.append(a)
        elif a.startswith("-"):
            pass  # -Wp,-MMD,..., -g, -pipe, --param=...: not the checker's concern
        else:
            files.append(a)
        i += 1
    if not files:
        raise CheckError("no source file given")
    if len(files) > 1:
        raise CheckError(f"one source file at a time, got {len(files)}: {' '.join(files)}")
    return Invocation(file=files[0], defines=defines, includes=includes, sparse=sparse, all_args=list(args))


def _which(name: str):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(d or ".", name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _tool(name: str, package: str) -> str:
    path = _which(name)
    if not path:
        raise CheckError(f"{name} not found: install Debian's '{package}' package (apt-get install {package})")
    return path


def _run(cmd: list, what: str) -> subprocess.CompletedProcess:
    """cmd's output as text. Read as bytes and decoded at once: a text-mode pipe decodes and
    translates newlines chunk by chunk, which costs ~0.04 s on a unit of 5 MB."""
    try:
        got = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT)
        got.stdout = got.stdout.decode("utf-8", "replace")
        got.stderr = got.stderr.decode("utf-8", "replace")
        return got
    except subprocess.TimeoutExpired:
        raise CheckError(f"{what} timed out after {TIMEOUT}s") from None
    except OSError as exc:
        raise CheckError(f"{what} could not be run: {exc}") from None


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln:
            return ln
    return lines[0] if lines else "unknown error"


def preprocess(inv: Invocation, directives: bool = True) -> str:
    """The translation unit as the configuration makes it, with cpp's line markers and (with
    directives) the #define/#undef directives in place (-dD). sparse's predefined macros go
    to cpp as -D options. -ftrack-macro-expansion=0: the unit is the same, and cpp is then
    about as fast as `sparse -E` instead of twice as slow."""
    sparse = _tool("sparse", "sparse")
    cpp = _tool("cpp", "cpp")
    got = _run([sparse, "-E", "-dM", *inv.sparse, *inv.defines, os.devnull], "sparse")
    if got.returncode != 0:
        raise CheckError(f"sparse refused the flags: {_first_error(got.stderr)}")
    predefs = []
    for ln in got.stdout.splitlines():
        m = _PREDEF.match(ln)
        if m and not _BUILTIN.match(ln):
            predefs.append(f"-D{m.group(1)}={m.group(2)}")
    # Into a file, read at once: through a pipe, 5 MB are ~500 wake-ups of both processes.
    out = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"wqlint-check-{os.getpid()}-{os.urandom(4).hex()}.i")
    try:
        got = _run([cpp, "-undef", "-w", *(["-dD"] if directives else []), "-ftrack-macro-expansion=0",
                    *predefs, *inv.defines, *inv.includes, inv.file, "-o", out], "cpp")
        if got.returncode != 0:
            raise CheckError(f"cannot preprocess: {_first_error(got.stderr)}")
        try:
            with open(out, "rb") as handle:
                return handle.read().decode("utf-8", "replace")
        except OSError as exc:
            raise CheckError(f"cannot read what cpp wrote to {out}: {exc.strerror}") from None
    finally:
        try:
            os.unlink(out)
        except OSError:
            pass


class Unit:
    """A preprocessed translation unit: the code the scanner reads (line markers and
    directives blanked, so that line numbers do not move) and, for each of its lines, the
    (file, line) it came from."""

    def __init__(self, text: str, directives: bool = True):
        self.raw = "\n" + text  # every directive, the first one too, follows a newline
        self.directives = directives
        self._markers = None
        self._spans_for: dict = {}  # file predicate -> [(first original line, first, last unit line)]
        self._names = None  # the names the unit #defines somewhere

    @property
    def code(self) -> str:
        return _DIRECTIVE.sub("\n", self.raw)[1:]

    def _parse_markers(self) -> None:
        if self._markers is not None:
            return
        self._markers = True
        raw = self.raw
        hits = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _MARKER.finditer(raw)]
        self._mline = []  # each marker's own line in the unit (1-based)
        count, pos, newlines = 0, 0, raw.count
        for start, _, _, _ in hits:
            count += newlines("\n", pos, start + 1)
            pos = start + 1
            self._mline.append(count)
        self._mpos = [h[1] for h in hits]
        self._morig = [int(h[2]) for h in hits]
        self._mfile = [h[3] if "\\" not in h[3] else h[3].replace('\\"', '"').replace("\\\\", "\\")
                       for h in hits]
        self._nlines = raw.count("\n")

    def files(self) -> list:
        self._parse_markers()
        return self._mfile

    def own_text(self, name: str) -> str:
        """The unit's text that came from the file cpp was given as name (the checked file):
        found by its markers alone, without parsing the others."""
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        parts = []
        for m in re.finditer(r'\n# \d+ "' + re.escape(quoted) + r'"[^\n]*', self.raw):
            nxt = _NEXT_MARKER.search(self.raw, m.end())
            parts.append(self.raw[m.end():nxt.start() if nxt else len(self.raw)])
        return "".join(parts)

    def where(self, n: int):
        """(file, line) unit line n came from; None for a marker line."""
        self._parse_markers()
        i = bisect.bisect_right(self._mline, n) - 1
        if i < 0 or self._mline[i] == n:
            return None
        return self._mfile[i], self._morig[i] + (n - self._mline[i] - 1)

    def lines_of(self, is_file, line: int) -> list:
        """The unit lines that came from line of a file for which is_file(name) holds."""
        self._parse_markers()
        spans = self._spans_for.get(is_file)
        if spans is None:
            names = {n for n in set(self._mfile) if is_file(n)}
            mline, mfile, morig = self._mline, self._mfile, self._morig
            spans = []
            for i, name in enumerate(mfile):
                if name in names:
                    last = mline[i + 1] - 1 if i + 1 < len(mline) else self._nlines
                    if last > mline[i]:
                        spans.append((morig[i], mline[i] + 1, last))
            self._spans_for[is_file] = spans
        return [first + line - orig for orig, first, last in spans if orig <= line <= orig + (last - first)]

    def _pos_of_line(self, n: int) -> int:
        """Offset in raw of the newline that starts unit line n."""
        self._parse_markers()
        i = bisect.bisect_right(self._mline, n) - 1
        if i < 0:
            pos, k = 0, n - 1
        else:
            pos, k = self._mpos[i], n - self._mline[i] - 1
        while k > 0 and pos >= 0:
            pos = self.raw.find("\n", pos + 1)
            k -= 1
        return pos if pos >= 0 else len(self.raw)

    def _line_of_pos(self, pos: int) -> int:
        """The unit line whose starting newline is at offset pos of raw."""
        self._parse_markers()
        i = bisect.bisect_right(self._mpos, pos) - 1
        if i < 0:
            return self.raw.count("\n", 0, pos + 1)
        return self._mline[i] + self.raw.count("\n", self._mpos[i], pos + 1)

    def _last(self, directive: str, name: str, limit: int) -> int:
        """Offset of the last `#directive name` before limit, or -1."""
        needle = f"\n#{directive} {name}"
        at = self.raw.rfind(needle, 0, limit)
        while at >= 0:
            nxt = self.raw[at + len(needle):at + len(needle) + 1]
            if nxt in ("", " ", "(", "\n"):
                return at
            at = self.raw.rfind(needle, 0, at)
        return -1

    def definitions(self, wanted: dict) -> dict:
        """{name: (unit line, body)} of the macros in wanted ({name: unit line of the use})
        that are defined there. Most names on a line are not macros: one pass over the unit
        lists the names it defines, and only those are looked for."""
        if self._names is None:
            self._names = set(_DEFINED_NAME.findall(self.raw))
        out = {}
        for name, before in wanted.items():
            if name in self._names:
                got = self.definition(name, before)
                if got is not None:
                    out[name] = got
        return out

    def definition(self, name: str, before: int = 0):
        """(unit line, body) of the definition of macro name live at unit line `before` (at
        the end of the unit when 0), or None when it is not a macro there. cpp -dD leaves each
        #define and #undef where it was: the last one before the use decides."""
        limit = self._pos_of_line(before) if before else len(self.raw)
        at = self._last("define", name, limit)
        if at < 0 or self._last("undef", name, limit) > at:
            return None
        end = self.raw.find("\n", at + 1)
        body = self.raw[at + len("\n#define ") + len(name):end if end >= 0 else len(self.raw)]
        return self._line_of_pos(at), body

    def config(self, name: str) -> str:
        """'NAME=y', 'NAME=m', 'NAME=value' or 'NAME not set', as this build has it."""
        base = name[:-len("_MODULE")] if name.endswith("_MODULE") else name
        got = self.definition(base)
        if got is not None:
            body = got[1].strip()
            return f"{base}={'y' if body == '1' else body}"
        if self.definition(base + "_MODULE") is not None:
            return f"{base}=m"
        return f"{base} not set"


class _Original:
    """The original sources, read on demand: their lines, and the #if around each line."""

    def __init__(self):
        self._lines = {}
        self._conds = {}

    def lines(self, path: str) -> list:
        if path not in self._lines:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    self._lines[path] = handle.read().split("\n")
            except OSError:
                self._lines[path] = []
        return self._lines[path]

    def line(self, path: str, n: int) -> str:
        lines = self.lines(path)
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def conditionals(self, path: str, n: int) -> list:
        """The #if groups line n is inside, outermost first: [(line of the #if, [directive
        texts of the group up to the branch n is in])]."""
        events = self._conds.get(path)
        if events is None:
            events = []
            lines = self.lines(path)
            i = 0
            while i < len(lines):
                m = _PP_COND.match(lines[i])
                if m:
                    text, first = lines[i], i
                    while text.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        text = text[:-1] + " " + lines[i].strip()
                    events.append((first + 1, m.group(1), " ".join(text.split())))
                i += 1
            self._conds[path] = events
        stack = []
        for ln, kind, text in events:
            if ln >= n:
                break
            if kind.startswith("if"):
                stack.append((ln, [text]))
            elif kind == "endif":
                if stack:
                    stack.pop()
            elif stack:
                stack[-1][1].append(text)
        return stack


def _column(unit_line: str, col: int, original: str) -> int:
    """The column in the original line of the name the unit's line has at col."""
    m = _IDENT.match(unit_line, max(col - 1, 0))
    if m:
        found = re.search(r"\b" + re.escape(m.group(0)) + r"\b", original)
        if found:
            return found.start() + 1
    stripped = len(original) - len(original.lstrip())
    return stripped + 1


def _mentions(path: str, pattern) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return bool(pattern.search(handle.read()))
    except OSError:
        return True  # let preprocessing say what is wrong


def _same_file(name: str, target: str, cache: dict) -> bool:
    got = cache.get(name)
    if got is None:
        got = cache[name] = name == target or (
            not name.startswith("<") and os.path.basename(name) == os.path.basename(target)
            and os.path.realpath(name) == os.path.realpath(target))
    return got


def _kernel_version(root):
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


_STARTED = time.monotonic()


def _debug(msg: str) -> None:
    if os.environ.get("WQLINT_DEBUG"):
        print(f"wqlint check: {msg}" + (f" ({time.monotonic() - _STARTED:.3f} s)"
                                         if os.environ["WQLINT_DEBUG"] == "time" else ""), file=sys.stderr)


class _Checker:
    """One invocation: the unit, its scan, the facts, and the findings in original terms."""

    def __init__(self, inv: Invocation, catalogue, kernel_version, ncpus, max_cpus, use_facts):
        self.inv = inv
        self.catalogue = catalogue
        self.kernel_version = kernel_version
        self.ncpus, self.max_cpus = ncpus, max_cpus
        self.use_facts = use_facts
        self.orig = _Original()
        self._same: dict = {}
        self.notes: list = []

    def is_main(self, name: str) -> bool:
        return _same_file(name, self.inv.file, self._same)

    # -- facts ---------------------------------------------------------------------------------
    def load_facts(self):
        from wqlint import facts as facts_mod
        self.root = facts_mod.find_root(self.inv.file)
        if self.root is None:  # a loose file: no tree to take facts from
            self.root, self.use_facts = os.path.dirname(os.path.realpath(self.inv.file)), False
        real = os.path.realpath(self.inv.file)
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
                                    self.inv.file, debug=_debug)
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
        if not os.path.isfile(self.inv.file):
            raise CheckError("no such file")
        started = time.monotonic()
        facts = self.load_facts()
        _debug(f"facts ready after {time.monotonic() - started:.3f} s")
        mention = facts.mention_re() if facts is not None else _SINK_CALL
        # -dD (which macro definition was live, what each CONFIG_ option is) costs a fifth
        # of the preprocessing: asked for only when the file can have something to report.
        likely = (facts is not None and facts.has_sites(self.rel)) or _mentions(self.inv.file, mention)
        unit = Unit(preprocess(self.inv, directives=likely), directives=likely)
        _debug(f"preprocessed after {time.monotonic() - started:.3f} s")
        own = unit.own_text(self.inv.file)
        if not (mention.search(own) or (facts is not None and facts.has_sites(self.rel))):
            _debug("no allocation in the unit: not scanned")
            return [], list(self.notes)
        if not unit.directives:  # an allocation only the expansion shows (rare): again, with -dD
            unit = Unit(preprocess(self.inv))
        import tempfile
        with tempfile.TemporaryDirectory(prefix="wqlint-check-") as workdir:
            got = self.scan(unit, facts, workdir)
        _debug(f"scanned after {time.monotonic() - started:.3f} s")
        return got

    def scan(self, unit: Unit, facts, workdir):
        from dataclasses import replace as dc_replace

        from wqlint.scan.engine import Engine, judge
        from wqlint.scan.values import has_unknown

        self.unit = unit
        unit_dir = os.path.join(workdir, "unit")
        os.mkdir(unit_dir)
        self.unit_rel = os.path.basename(self.inv.file)
        code = unit.code
        data = code.encode("utf-8", "replace")
        with open(os.path.join(unit_dir, self.unit_rel), "wb") as handle:
            handle.write(data)
        version = self.kernel_version or _kernel_version(self.root)
        eng = self.engine = Engine([os.path.join(unit_dir, self.unit_rel)], self.catalogue, jobs=1,
                                   kernel_version=version, ncpus=self.ncpus, max_cpus=self.max_cpus,
                                   preloaded={self.unit_rel: data})
        _debug("scanner ready")
        sites = eng.sites()
        _debug(f"{len(sites)} sites in the unit")
        tree_sites = facts.sites(self.rel, self.shown) if facts is not None else []
        by_line: dict = {}
        for s in tree_sites:
            by_line.setdefault(s.line, []).append(s)
        shown_main = self.shown(self.rel)
        out, done = [], set()
        self._mapped: dict = {}
        for s in sites:
            at = self.back(s.path, s.line)
            if at is None or not self.is_main(at[0]):
                continue  # a header's allocation: reported where the header is checked, not here
            line = at[1]
            tree = self._pick(by_line.get(line, []), s)
            col = tree.col if tree else _column(self._unit_line(s.line), s.col, self.orig.line(at[0], line))
            site = dc_replace(s, path=shown_main, line=line, col=col,
                           end_col=tree.end_col if tree else 0,
                           flags=self.original(s.flags), max_active=self.original(s.max_active),
                           prefix=[self.step(p) for p in s.prefix])
            if tree is not None:
                # What the unit cannot resolve (a field assigned in another file, a macro
                # expanded past what resolution reads) is taken as the tree resolved it.
                if has_unknown(s.max_active):
                    site.max_active = tree.max_active
                    _debug(f"line {line}: max_active from the tree analysis")
                elif self._same_values(site.max_active, tree.max_active):
                    # The same whatever the machine, and the tree's chain is in the words of
                    # the source: num_possible_cpus(), not what this configuration expands
                    # it to (cpumask_weight(((const struct cpumask *)&__cpu_possible_mask))).
                    site.max_active = tree.max_active
                if has_unknown(s.flags):
                    site.flags = tree.flags
                    _debug(f"line {line}: flags from the tree analysis")
            done.add(line)
            out.append(site)
        for t in tree_sites:
            if t.line in done or not t.via:
                continue  # the unit saw this call, or it is not through a wrapper it lacks
            site = self.through_wrapper(t)
            if site is not None:
                out.append(site)
        if not out:
            return [], list(self.notes)
        ctx = eng.context(bits=eng._bits(self.unit_rel) if b"WQ_UNBOUND" in data else None,
                          api_header=self.api_header())
        findings = judge(out, ctx)
        _debug(f"{len(findings)} findings")
        sites_at = {}
        for site in out:
            sites_at.setdefault((site.line, site.col), site)
        lines = []
        for f in findings:
            site = sites_at.get((f.line, f.col))
            configs, cond_steps = self.configuration(site) if site is not None else ([], [])
            message = f.message + (f" (with {', '.join(configs)})" if configs else "")
            lines.append(f"{f.path}:{f.line}:{f.col}: {f.severity}: {message} [{f.rule_id}]")
            for step in f.chain:
                lines.append(f"    {step.path}:{step.line}: {step.note}")
            for path, ln, note in cond_steps:
                lines.append(f"    {path}:{ln}: {note}")
            if f.migration:
                lines.append(f"    fix: {f.migration}")
        errors = [str(e) for e in list(eng.errors) + list(eng.index.errors)
                  if e.path != self.unit_rel and not e.path.endswith("/" + self.unit_rel)]
        return lines, list(self.notes) + errors

    # -- unit to original ------------------------------------------------------------------------
    def _unit_line(self, n: int) -> str:
        src = self.engine.index.source(self.unit_rel)
        return src.line_text(n) if src is not None else ""

    def back(self, rel: str, n: int):
        if rel != self.unit_rel:
            return None
        return self.unit.where(n)

    def step(self, step):
        from wqlint.finding import Step
        if step is None:
            return None
        at = self.back(step.path, step.line)
        if at is None:
            return step
        return Step(os.path.normpath(at[0]), at[1], step.text, step.note)

    def original(self, value):
        """value with every step of the unit pointing at the original file and line."""
        from wqlint.scan.values import Alt, Op, Tunable
        key = id(value)
        got = self._mapped.get(key)
        if got is not None:
            return got[1]
        step = self.step(value.step)
        if isinstance(value, Alt):
            new = Alt(step, tuple(self.original(o) for o in value.options), value.why)
        elif isinstance(value, Op):
            new = Op(step, value.op, tuple(self.original(a) for a in value.args))
        elif isinstance(value, Tunable):
            new = Tunable(step, self.original(value.default), value.how)
        else:
            from dataclasses import replace as dc_replace
            new = dc_replace(value, step=step)
        self._mapped[key] = (value, new)  # the original is kept alive so that ids stay unique
        return new

    def api_header(self):
        """Where the unit's alloc_workqueue() came from: the API's own CPU counts are not the
        caller's."""
        if not hasattr(self, "_api"):
            self._api = next((os.path.normpath(n) for n in self.unit.files()
                              if n.endswith("include/linux/workqueue.h")), None)
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

    @staticmethod
    def _pick(candidates: list, site):
        if not candidates:
            return None
        for c in candidates:
            if c.entry == site.entry:
                return c
        return candidates[0]

    # -- a wrapper defined in another file -------------------------------------------------------
    def through_wrapper(self, tree_site):
        """A call of a wrapper the unit does not know (defined in another file), as the tree
        analysis resolved it, with the arguments the unit passes resolved as configured.
        None when the configuration leaves the call out."""
        from wqlint.scan import parser
        from wqlint.scan.resolve import SITE_BUDGET, calls_named, scope_of
        from wqlint.scan.values import Alt, has_unknown

        wrapper = tree_site.via[0]
        src = self.engine.index.source(self.unit_rel)
        if src is None:
            return None
        found = None
        for n in self.unit.lines_of(self.is_main, tree_site.line):
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
            resolver.budget = SITE_BUDGET
            resolver.home = self.unit_rel
            values = [resolver.resolve(a, scope) for a in args]
            if not self.engine.index.fetch_pending():
                break
        values = [self.original(v) for v in values]
        shown_main = self.shown(self.rel)

        def rebind(v):
            if isinstance(v, Alt):
                st = v.step
                m = _ARG_NOTE.match(st.note) if st is not None else None
                if m and m.group(2) == wrapper and st.path == shown_main and st.line == tree_site.line:
                    i = int(m.group(1)) - 1
                    if i < len(values) and not has_unknown(values[i]):
                        return Alt(st, (values[i],), v.why)
                    return v
                return Alt(v.step, tuple(rebind(o) for o in v.options), v.why)
            from wqlint.scan.values import Op, Tunable
            if isinstance(v, Op):
                return Op(v.step, v.op, tuple(rebind(a) for a in v.args))
            if isinstance(v, Tunable):
                return Tunable(v.step, rebind(v.default), v.how)
            return v
        _debug(f"line {tree_site.line}: {wrapper}() from the tree analysis, "
               f"arguments as configured: {[parser.text(a) for a in args]}")
        from dataclasses import replace as dc_replace
        return dc_replace(tree_site, flags=rebind(tree_site.flags), max_active=rebind(tree_site.max_active))

    # -- configuration -----------------------------------------------------------------------------
    def configuration(self, site):
        """The CONFIG_ options the site's flags and max_active hang on, as this build has
        them, and a chain step for each #if that decides it."""
        from wqlint.scan.values import walk
        places = set()
        for v in (site.flags, site.max_active):
            for node in walk(v):
                if node.step is not None:
                    places.add((node.step.path, node.step.line))
        for st in site.prefix:
            places.add((st.path, st.line))
        places.add((site.path, site.line))
        # Macros used on those lines, where the unit defines them, and the macros they use
        # (three levels down), looked up together, one pass over the unit per level.
        level = []
        for path, line in places:
            if self.is_main(path):
                units = self.unit.lines_of(self.is_main, line)
                if units:
                    level.append((self.orig.line(path, line), units[0]))
        seen = set()
        for _ in range(4):
            wanted = {}
            for text, before in level:
                for name in _IDENT.findall(text):
                    if name not in seen and name not in _LEAVES and not name.startswith("CONFIG_"):
                        seen.add(name)
                        wanted[name] = before
            level = []
            for name, (uline, body) in self.unit.definitions(wanted).items():
                at = self.unit.where(uline)
                if at is None or at[0].startswith("<"):
                    continue
                places.add((os.path.normpath(at[0]), at[1]))
                level.append((body, uline))
        configs, steps = [], []
        api = self.api_header()
        for path, line in sorted(places):
            if path.startswith("<") or path == api:
                continue  # how the workqueue API itself is configured is not the caller's choice
            for if_line, texts in self.orig.conditionals(path, line):
                names = []
                for t in texts:
                    for name in _CONFIG.findall(t):
                        shown = self.unit.config(name)
                        if shown not in names:
                            names.append(shown)
                if not names:
                    continue
                note = f"'{texts[0]}'" + (f" ('{texts[-1]}' branch)" if len(texts) > 1 else "") + \
                    f": {', '.join(names)} in this build"
                if (path, if_line, note) not in steps:
                    steps.append((path, if_line, note))
                for n in names:
                    if n not in configs:
                        configs.append(n)
        return configs, steps


def check(inv: Invocation, catalogue, kernel_version=None, ncpus=96, max_cpus=512, use_facts=True):
    """The findings for inv.file, as sparse-style lines (the warning, then its chain), and the
    problems worth a line of their own."""
    return _Checker(inv, catalogue, kernel_version, ncpus, max_cpus, use_facts).run()


def run_sparse(inv: Invocation) -> subprocess.CompletedProcess:
    """sparse's own checks, with the same arguments."""
    return _run([_tool("sparse", "sparse"), *inv.all_args], "sparse")


def run_command(inv: Invocation, catalogue, also_sparse=False, kernel_version=None, ncpus=96,
                max_cpus=512) -> int:
    """`wqlint check`: print sparse's output (--also-sparse), then the findings, on stderr as
    sparse does; the exit status Kbuild expects of a checker (0: checked, findings or not)."""
    try:
        if also_sparse:
            got = run_sparse(inv)
            sys.stdout.write(got.stdout)
            sys.stdout.flush()
            sys.stderr.write(got.stderr)
        lines, errors = check(inv, catalogue, kernel_version=kernel_version, ncpus=ncpus, max_cpus=max_cpus)
    except CheckError as exc:
        print(f"wqlint check: {inv.file}: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(line, file=sys.stderr)
    for err in errors:
        print(f"wqlint check: {inv.file}: {err}", file=sys.stderr)
    return 0


# wqlint's own options of `wqlint check` (everything else is Kbuild's): do they take a value?
_OWN_OPTIONS = {"--also-sparse": False, "--kernel-version": True, "--cpus": True, "--max-cpus": True,
                "--rules": True}


def main(argv: list):
    """`wqlint check ARGS` without click (see wqlint.entry): the exit status, or None when
    ARGS need the click command (--help, a malformed option or value, a usage error), which
    then says what is wrong, exactly as it always does."""
    opts, rest, i = {}, [], 0
    while i < len(argv):
        a = argv[i]
        name, eq, value = a.partition("=")
        if a == "--help":
            return None
        if name in _OWN_OPTIONS:
            if not _OWN_OPTIONS[name]:
                if eq:
                    return None
                value = True
            elif not eq:
                if i + 1 >= len(argv):
                    return None
                i += 1
                value = argv[i]
            opts[name] = value
        else:
            rest.append(a)
        i += 1
    try:
        version = None
        if "--kernel-version" in opts:
            from wqlint import kversion
            version = kversion.parse_version(opts["--kernel-version"])
        cpus, max_cpus = int(opts.get("--cpus", 96)), int(opts.get("--max-cpus", 512))
        inv = parse_args(rest)
    except (ValueError, CheckError):
        return None
    if not (1 <= cpus <= 65536 and 1 <= max_cpus <= 65536):
        return None
    rules = opts.get("--rules")

    return run_command(inv, _LazyCatalogue(rules), bool(opts.get("--also-sparse")), version, cpus, max_cpus)


class _LazyCatalogue:
    """The rule catalogue, read (YAML: a few hundredths of a second) the first time a rule is
    looked up, which is when a site has something to report."""

    def __init__(self, path):
        self.path = path
        self._cat = None

    def __getitem__(self, rule_id):
        if self._cat is None:
            from wqlint import catalogue as catalogue_mod
            try:
                self._cat = catalogue_mod.load(self.path)
            except catalogue_mod.CatalogueError as exc:
                print(f"Error: {exc}", file=sys.stderr)
                sys.exit(2)
        return self._cat[rule_id]
