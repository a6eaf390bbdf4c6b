// SPDX-License-Identifier: GPL-2.0-only
///
/// Find ordered workqueues with WQ_SYSFS, which kernels before v7.1 refuse
///
/// Before v7.1 workqueue_sysfs_register() starts with
/// WARN_ON(wq->flags & __WQ_ORDERED) and returns -EINVAL: the allocation of an
/// ordered queue with WQ_SYSFS fails and returns NULL, usually at boot or
/// probe.  v7.1 (a4aa8d94f243) exposes ordered queues with max_active
/// read-only.  Drop WQ_SYSFS, or keep the queue unordered if it must be
/// tunable from user space.
///
//# The version is the tree's: VERSION and PATCHLEVEL of the top Makefile of
//# the tree whose include/linux/workqueue.h is found (from the file upwards,
//# then from the current directory); with no tree or no version the rule is
//# silent (wqlint's default is the newest kernel, which allows it).  Ordered:
//# alloc_ordered_workqueue() and
//# its _lockdep_map, devm_ and drmm_ forms, or __WQ_ORDERED in every value of
//# the flags of an allocation function.  WQ_SYSFS must be in every value the
//# flags can have here (at the call, or in every value given to a local of
//# the calling function before the call).  Flags from parameters, fields,
//# macros or a conditional, wrappers and functions Coccinelle cannot parse are
//# left to `wqlint scan`.  No patch mode: the fix is the author's decision.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// URL: https://coccinelle.gitlabpages.inria.fr/website
// Options: --no-includes --include-headers
// Requires: 1.1.1
// Keywords: alloc_ordered_workqueue, WQ_SYSFS, __WQ_ORDERED
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

MSG = "ordered workqueue with WQ_SYSFS: workqueue_sysfs_register() refuses it with a WARN_ON and the allocation fails (allowed from v7.1, a4aa8d94f243)"

def judge(p, f, ordered):
    file, fn, line = p[0].file, p[0].current_element, int(p[0].line)
    version = tree_version(file)
    if version is None or version >= (7, 1):
        return  # a4aa8d94f243: allowed, max_active read-only
    if not must_have("WQ_SYSFS", file, fn, f, line):
        return
    if ordered == "ordered" or must_have("__WQ_ORDERED", file, fn, f, line):
        hits.add(_pos(p))

// Only a file naming WQ_SYSFS can have a finding, so the allocation rules
// depend on this one: spatch's prefilter then parses only the files naming
// both WQ_SYSFS and an allocation.

@sysfs@
@@

 WQ_SYSFS

// Every allocation; judged in rule r, once the facts of its file are known.

@alloc depends on sysfs@
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
p << alloc.p;
@@
add_call(p, f, "")

@ordered depends on sysfs@
expression fmt, f, dev;
position p;
@@

(
 alloc_ordered_workqueue@p(fmt, f, ...)
|
 alloc_ordered_workqueue_lockdep_map@p(fmt, f, ...)
|
 devm_alloc_ordered_workqueue@p(dev, fmt, f, ...)
|
 drmm_alloc_ordered_workqueue@p(dev, fmt, f, ...)
)

@script:python@
f << ordered.f;
p << ordered.p;
@@
add_call(p, f, "ordered")

// Facts about a file with allocations: values given to locals, recorded by
// the constraints of rules that never match.

@assign depends on alloc || ordered@
local idexpression x;
expression e;
position p : script:python(x, e) { add_assign(p, x, e) };
@@

 x@p = e

@orassign depends on alloc || ordered@
local idexpression x;
expression e;
position p : script:python(x, e) { add_assign(p, x, e) };
@@

 x@p |= e

@dinit depends on alloc || ordered@
identifier x;
type T;
expression e;
position p : script:python(x, e) { add_decl(p, x) or add_assign(p, x, e) };
@@

 T x@p = e;

@dvar depends on alloc || ordered@
identifier x;
type T;
position p : script:python(x) { add_decl(p, x) };
@@

 T x@p;

@r depends on alloc || ordered@
position p : script:python() { decide(p) };
@@

(
 alloc_workqueue@p(...)
|
 alloc_workqueue_lockdep_map@p(...)
|
 devm_alloc_workqueue@p(...)
|
 alloc_ordered_workqueue@p(...)
|
 alloc_ordered_workqueue_lockdep_map@p(...)
|
 devm_alloc_ordered_workqueue@p(...)
|
 drmm_alloc_ordered_workqueue@p(...)
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
|
* alloc_ordered_workqueue@p(...)
|
* alloc_ordered_workqueue_lockdep_map@p(...)
|
* devm_alloc_ordered_workqueue@p(...)
|
* drmm_alloc_ordered_workqueue@p(...)
)

@script:python depends on org@
p << r.p;
@@
coccilib.org.print_todo(p[0], MSG)

@script:python depends on report@
p << r.p;
@@
coccilib.report.print_report(p[0], MSG)
