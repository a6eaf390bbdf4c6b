// SPDX-License-Identifier: GPL-2.0-only
///
/// Queue work on system_percpu_wq and system_dfl_wq, not on the old names
///
/// system_wq and system_unbound_wq are being replaced by system_percpu_wq and
/// system_dfl_wq (128ea9f6ccfb), queues made with the same flags and
/// max_active under names that say whether the work is per-CPU.  Since v7.2
/// (64d8eae3f895) the old ones carry __WQ_DEPRECATED and the first work queued
/// on either per boot gets a pr_warn_once.  The patch mode passes the new name.
///
//# Only in trees whose include/linux/workqueue.h declares system_percpu_wq
//# (looked up from the file upwards, then from the current directory; assumed
//# declared when no tree is found).  The calls that take a queue:
//# queue_work() and its _on, _node, delayed, rcu and enable_and_ forms,
//# mod_delayed_work(), mod_delayed_work_on(), flush_workqueue(),
//# __flush_workqueue() and drain_workqueue(), given the old name as the queue
//# or as a branch of a conditional.  The schedule_work() family queues on
//# system_percpu_wq already and is left alone.  A queue passed through a
//# local, a field or a wrapper's parameter is left to `wqlint scan`.  A flush
//# of the old name waits only for work queued on it: convert every use.
//
// Confidence: High
// Copyright: (C) 2026 The wqlint authors.
// URL: https://coccinelle.gitlabpages.inria.fr/website
// Options: --no-includes --include-headers
// Requires: 1.1.1
// Keywords: queue_work, system_wq, system_unbound_wq, system_percpu_wq
//

virtual patch
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

# In a tree whose workqueue.h has no system_percpu_wq no call can be reported: read no file.
if inputs_lack("system_percpu_wq"):
    raise SystemExit(0)

MSG = "system_wq and system_unbound_wq are deprecated: use system_percpu_wq or system_dfl_wq"

SYSTEM = ("system_wq", "system_unbound_wq")

def system_queue(q):
    """q is an old system queue, or a conditional with one as a branch."""
    parts = [s.strip().strip("()").strip() for s in re.split(r"[?:]", _text(q))]
    return any(s in SYSTEM for s in (parts if len(parts) == 1 else parts[1:]))

def judge(p, q):
    if system_queue(q) and tree_defines("system_percpu_wq", p[0].file):
        hits.add(_pos(p))

def add_use(p, q):
    calls[_pos(p)] = (p, str(q))

// Only a file naming an old system queue can have a finding, so the call
// rule depends on this one: spatch's prefilter then parses only the files
// naming both the queue and a call that takes one.

@system@
symbol system_wq, system_unbound_wq;
@@

(
 system_wq
|
 system_unbound_wq
)

// Every call that takes a queue, with the queue argument Q.

@use depends on system@
expression Q, a;
position p;
@@

(
 queue_work@p(Q, ...)
|
 queue_work_on@p(a, Q, ...)
|
 queue_work_node@p(a, Q, ...)
|
 queue_delayed_work@p(Q, ...)
|
 queue_delayed_work_on@p(a, Q, ...)
|
 mod_delayed_work@p(Q, ...)
|
 mod_delayed_work_on@p(a, Q, ...)
|
 queue_rcu_work@p(Q, ...)
|
 enable_and_queue_work@p(Q, ...)
|
 flush_workqueue@p(Q)
|
 __flush_workqueue@p(Q)
|
 drain_workqueue@p(Q)
)

@script:python@
Q << use.Q;
p << use.p;
@@
add_use(p, Q)

@r depends on use@
position p : script:python() { decide(p) };
@@

(
 queue_work@p(...)
|
 queue_work_on@p(...)
|
 queue_work_node@p(...)
|
 queue_delayed_work@p(...)
|
 queue_delayed_work_on@p(...)
|
 mod_delayed_work@p(...)
|
 mod_delayed_work_on@p(...)
|
 queue_rcu_work@p(...)
|
 enable_and_queue_work@p(...)
|
 flush_workqueue@p(...)
|
 __flush_workqueue@p(...)
|
 drain_workqueue@p(...)
)

// Patch: the new name for the old one, in the queue argument of a reported
// call (the first argument, or the second of the _on and _node forms).

@depends on patch@
position r.p;
identifier call;
expression a;
symbol system_wq, system_unbound_wq;
@@

(
 call@p(<+...
(
- system_wq
+ system_percpu_wq
|
- system_unbound_wq
+ system_dfl_wq
)
 ...+>, ...)
|
 call@p(a, <+...
(
- system_wq
+ system_percpu_wq
|
- system_unbound_wq
+ system_dfl_wq
)
 ...+>, ...)
)

@depends on context@
position r.p;
identifier call;
@@

* call@p(...)

@script:python depends on org@
p << r.p;
@@
coccilib.org.print_todo(p[0], MSG)

@script:python depends on report@
p << r.p;
@@
coccilib.report.print_report(p[0], MSG)
