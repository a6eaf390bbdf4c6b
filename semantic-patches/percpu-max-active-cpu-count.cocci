// SPDX-License-Identifier: GPL-2.0-only
///
/// Find per-CPU workqueues whose max_active is derived from a CPU count
///
/// On a per-CPU workqueue (no WQ_UNBOUND) max_active has always been a limit
/// on every CPU, so max_active = num_online_cpus() allows ncpus x ncpus work
/// items in flight: 9216 on a 96-CPU machine.  A per-CPU limit does not need
/// the CPU count: use a small constant, or WQ_UNBOUND with a system-wide
/// limit if a global bound was meant.
///
//# Reported only when every flag is known here: WQ_* constants and locals of
//# the calling function whose every value given before the call is known.
//# Flags from a parameter, a struct field, a macro or a ternary with a
//# run-time condition are left to `wqlint scan`, which resolves them.
//# max_active is followed as in unbound-max-active-cpu-count.cocci: CPU
//# counts, min/max/min_t/max_t/clamp or arithmetic over them, locals, and
//# struct fields given a CPU count in the same file (by field name).  Fields
//# set in another file, module parameters and wrappers: `wqlint scan` only.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// URL: https://coccinelle.gitlabpages.inria.fr/website
// Options: --no-includes --include-headers
// Requires: 1.1.1
// Keywords: alloc_workqueue, max_active, num_online_cpus, per-CPU
//

virtual context
virtual org
virtual report

@initialize:python@
@@
# -- shared helpers: keep this block identical in every wqlint .cocci file --
import os
import re

CPU_RE = re.compile(r"\b(?:num_(?:online|possible|present|active)_cpus|nr_cpu_ids|NR_CPUS|cpumask_weight)\b")
ID_RE = re.compile(r"(?<![\w.>$])([A-Za-z_]\w*)\b(?!\s*\()")
FIELD_RE = re.compile(r"(?:->|\.)\s*([A-Za-z_]\w*)")
PLAIN_RE = re.compile(r"[\w\s|()<]*")
CALL_RE = re.compile(r"[A-Za-z_]\w*\s*\(")
WQ_FLAGS = frozenset((
    "WQ_BH", "WQ_UNBOUND", "WQ_FREEZABLE", "WQ_MEM_RECLAIM", "WQ_HIGHPRI",
    "WQ_CPU_INTENSIVE", "WQ_SYSFS", "WQ_POWER_EFFICIENT", "WQ_PERCPU",
    "__WQ_DESTROYING", "__WQ_DRAINING", "__WQ_ORDERED", "__WQ_LEGACY",
    "__WQ_DEPRECATED"))

assigns = {}   # (file, function, local) -> [(line, right-hand side)]
declared = set()  # (file, function, local) declared in the body of the function
fields = {}    # (file, field) -> [(function, line, right-hand side)]
calls = {}     # (file, line, column) -> the arguments of that allocation
hits = set()   # (file, line, column) of the calls to report
_trees = {}
_versions = {}

def _pos(p):
    return (p[0].file, int(p[0].line), int(p[0].column))

def in_function(p):
    """Not in the body of a #define: wqlint scan reports macros at their uses."""
    return p[0].current_element != "something_else"

def add_call(p, *args):
    if in_function(p):
        calls[_pos(p)] = (p,) + tuple(str(a) for a in args)

def decide(p):
    """Judge the allocation at p once every fact of its file is known."""
    key = _pos(p)
    if key in calls:
        args = calls.pop(key)
        judge(args[0], *args[1:])
    return key in hits

def _text(e):
    """C text as a script rule prints it: a constraint gets it with a space
    between tokens ('s -> f ( )'), kept only between two words."""
    return re.sub(r"\s+(?=[^\w\s])|(?<=[^\w\s])\s+", "", str(e))

# The add_* facts are recorded by the constraints of rules that never match
# (each returns False): no binding environment, no script rule per match.

def add_assign(p, x, e):
    assigns.setdefault((p[0].file, p[0].current_element, _text(x)), []).append((int(p[0].line), _text(e)))
    return False

def add_decl(p, x):
    declared.add((p[0].file, p[0].current_element, _text(x)))
    return False

def add_field(p, fld, e):
    fields.setdefault((p[0].file, _text(fld)), []).append((p[0].current_element, int(p[0].line), _text(e)))
    return False

def _values(file, fn, x, line):
    return [(l, e) for (l, e) in assigns.get((file, fn, x), ()) if l <= line]

def cpu_derived(file, fn, e, line, seen=()):
    """e is a CPU count or computed from one: directly, through locals of fn
    assigned before line, or through struct fields assigned in this file."""
    if CPU_RE.search(e):
        return True
    for fld in FIELD_RE.findall(e):
        if "." + fld not in seen:
            for (ffn, fline, rhs) in fields.get((file, fld), ()):
                if cpu_derived(file, ffn, rhs, fline, seen + ("." + fld,)):
                    return True
    for x in ID_RE.findall(e):
        if x not in seen:
            for (l, rhs) in _values(file, fn, x, line):
                if cpu_derived(file, fn, rhs, l, seen + (x,)):
                    return True
    return False

def may_have(flag, file, fn, e, line, seen=()):
    """flag is written in e or in a value given before line to a local in e."""
    if re.search(r"\b%s\b" % flag, e):
        return True
    for x in ID_RE.findall(e):
        if x not in seen:
            for (l, rhs) in _values(file, fn, x, line):
                if may_have(flag, file, fn, rhs, l, seen + (x,)):
                    return True
    return False

def must_have(flag, file, fn, e, line, seen=()):
    """flag is in every value e can have here: e is an OR of terms (no call, no
    conditional, no mask) naming flag itself, or a local of fn whose every value
    given before line must have it (a |= of other flags is such a value: the
    rule then stays silent)."""
    if not PLAIN_RE.fullmatch(e) or CALL_RE.search(e):
        return False
    if re.search(r"\b%s\b" % flag, e):
        return True
    for x in ID_RE.findall(e):
        values = _values(file, fn, x, line)
        if (x not in seen and (file, fn, x) in declared and values
                and all(must_have(flag, file, fn, rhs, l, seen + (x,)) for (l, rhs) in values)):
            return True
    return False

def flag_names(file, fn, e, line, seen=()):
    """Every WQ_* flag e can hold, or None when e is not fully known here:
    only WQ_* constants, numbers, '|' and locals declared in fn whose every
    value given before line is itself fully known."""
    if not PLAIN_RE.fullmatch(e) or CALL_RE.search(e):
        return None
    names = set()
    for x in re.findall(r"[A-Za-z_]\w*", e):
        if x in WQ_FLAGS:
            names.add(x)
            continue
        values = _values(file, fn, x, line)
        if x in seen or (file, fn, x) not in declared or not values:
            return None
        for (l, rhs) in values:
            sub = flag_names(file, fn, rhs, l, seen + (x,))
            if sub is None:
                return None
            names |= sub
    return names

def literal(n):
    """n is a string literal that can serve as a format string as it is."""
    return re.fullmatch(r'"[^"%\\]*"', n) is not None

def _tree(file):
    """The top of the tree holding file (the directory whose
    include/linux/workqueue.h is found first, from the file upwards, then from
    the current directory: make coccicheck runs at the top), or None."""
    for d in (os.path.dirname(os.path.abspath(file)), os.getcwd()):
        while True:
            h = os.path.join(d, "include", "linux", "workqueue.h")
            if h not in _trees:
                _trees[h] = None
                if os.path.isfile(h):
                    with open(h, encoding="utf-8", errors="replace") as fh:
                        _trees[h] = fh.read()
            if _trees[h] is not None:
                return d
            if os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
    return None

def tree_defines(symbol, file):
    """symbol is in include/linux/workqueue.h of the tree holding file; True if
    no tree is found."""
    top = _tree(file)
    if top is None:
        return True
    h = os.path.join(top, "include", "linux", "workqueue.h")
    return re.search(r"\b%s\b" % symbol, _trees[h]) is not None

def tree_version(file):
    """(VERSION, PATCHLEVEL) of the top Makefile of the tree holding file, or
    None (no tree, or no version in it)."""
    top = _tree(file)
    if top is None:
        return None
    if top not in _versions:
        _versions[top] = None
        try:
            with open(os.path.join(top, "Makefile"), encoding="utf-8", errors="replace") as fh:
                head = fh.read(4096)
            v = re.search(r"(?m)^VERSION\s*=\s*(\d+)\s*$", head)
            pl = re.search(r"(?m)^PATCHLEVEL\s*=\s*(\d+)\s*$", head)
            if v and pl:
                _versions[top] = (int(v.group(1)), int(pl.group(1)))
        except OSError:
            pass
    return _versions[top]

def inputs_lack(symbol):
    """This run's one input is a directory (make coccicheck: --dir D) in a tree
    whose include/linux/workqueue.h does not name symbol, so no file of it can
    have a finding (tree_defines() would say no for each): the rule then stops
    before spatch reads any file. False when that is not certain: other inputs,
    no /proc, D in no tree."""
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            argv = fh.read().decode("utf-8", "replace").split("\0")
    except OSError:
        return False
    dirs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--dir"]
    if len(dirs) != 1 or "--file-groups" in argv or not os.path.isdir(dirs[0]):
        return False
    probe = os.path.join(dirs[0], "-")  # _tree() starts from the directory of a file
    return _tree(probe) is not None and not tree_defines(symbol, probe)
# -- end of shared helpers --

MSG = "per-CPU workqueue with max_active derived from a CPU count: the limit applies on every CPU, so in-flight items grow with the square of the CPU count"

def judge(p, f, m):
    file, fn, line = p[0].file, p[0].current_element, int(p[0].line)
    names = flag_names(file, fn, f, line)
    if names is not None and "WQ_UNBOUND" not in names and cpu_derived(file, fn, m, line):
        hits.add(_pos(p))

// Only a file that names a CPU count can have a finding (cpu_derived() reads
// the texts of this file only), so every rule below depends on this one:
// spatch's prefilter then parses only the files naming both an allocation and
// a CPU count.

@cpu@
symbol num_online_cpus, num_possible_cpus, num_present_cpus, num_active_cpus;
symbol cpumask_weight, nr_cpu_ids, NR_CPUS;
@@

(
 num_online_cpus
|
 num_possible_cpus
|
 num_present_cpus
|
 num_active_cpus
|
 cpumask_weight
|
 nr_cpu_ids
|
 NR_CPUS
)

// Every allocation; judged in rule r, once the facts of its file are known.

@alloc depends on cpu@
expression fmt, f, m, dev;
position p;
@@

(
 alloc_workqueue@p(fmt, f, m, ...)
|
 alloc_workqueue_lockdep_map@p(fmt, f, m, ...)
|
 devm_alloc_workqueue@p(dev, fmt, f, m, ...)
)

@script:python@
f << alloc.f;
m << alloc.m;
p << alloc.p;
@@
add_call(p, f, m)

// Facts about a file with allocations: values given to locals and to fields.

@assign depends on alloc@
local idexpression x;
expression e;
position p : script:python(x, e) { add_assign(p, x, e) };
@@

 x@p = e

@orassign depends on alloc@
local idexpression x;
expression e;
position p : script:python(x, e) { add_assign(p, x, e) };
@@

 x@p |= e

@dinit depends on alloc@
identifier x;
type T;
expression e;
position p : script:python(x, e) { add_decl(p, x) or add_assign(p, x, e) };
@@

 T x@p = e;

@dvar depends on alloc@
identifier x;
type T;
position p : script:python(x) { add_decl(p, x) };
@@

 T x@p;

@fset depends on alloc disable ptr_to_array@
identifier fld;
expression s, e;
position p : script:python(fld, e) { add_field(p, fld, e) };
@@

 s->fld@p = e

@fdot depends on alloc@
identifier fld;
expression s, e;
position p : script:python(fld, e) { add_field(p, fld, e) };
@@

 s.fld@p = e

@r depends on alloc@
position p : script:python() { decide(p) };
@@

(
 alloc_workqueue@p(...)
|
 alloc_workqueue_lockdep_map@p(...)
|
 devm_alloc_workqueue@p(...)
)

@depends on context@
position r.p;
@@

(
* alloc_workqueue@p(...)
|
* alloc_workqueue_lockdep_map@p(...)
|
* devm_alloc_workqueue@p(...)
)

@script:python depends on org@
p << r.p;
@@
coccilib.org.print_todo(p[0], MSG)

@script:python depends on report@
p << r.p;
@@
coccilib.report.print_report(p[0], MSG)
