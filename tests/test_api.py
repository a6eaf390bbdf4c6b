"""wqlint.api is the one description of the workqueue API: everything that names it agrees."""
from __future__ import annotations

import re

import pytest

from conftest import REPO
from helpers import scan_json
from wqlint import api

COCCI = sorted((REPO / "semantic-patches").glob("*.cocci"))
# `name@p(a, b, ...)` in a rule: a call the rule matches, with its arguments written out.
CALL_RE = re.compile(r"\b([A-Za-z_]\w*)@p\s*\(([^()\n]*)\)")
CPU_RE_LINE = re.compile(r'^CPU_RE = re\.compile\(r"(.*)"\)$', re.M)


def expand(pattern: str) -> set:
    """Every string a regex of literals, `(?:a|b)` groups and `|` matches."""
    def alternatives(s: str) -> list:
        out, depth, cur = [], 0, ""
        for ch in s:
            if ch == "|" and depth == 0:
                out.append(cur)
                cur = ""
                continue
            depth += ch == "("
            depth -= ch == ")"
            cur += ch
        return out + [cur]

    def words(s: str) -> set:
        m = re.search(r"\(\?:", s)
        if not m:
            return {s}
        depth, i = 0, m.start()
        for j in range(m.start(), len(s)):
            depth += s[j] == "("
            depth -= s[j] == ")"
            if depth == 0:
                break
        head, inner, tail = s[:i], s[m.end():j], s[j + 1:]
        return {head + a + t for alt in alternatives(inner) for a in words(alt) for t in words(tail)}

    body = pattern.replace(r"\b", "")
    return {w for alt in alternatives(body) for w in words(alt)}


# `identifier call;`: a metavariable standing for a call already matched by name.
IDENT_RE = re.compile(r"(?m)^identifier ([\w, ]+);$")
# `identifier fn = {a, b};`: the functions a rule looks for the definitions of.
IDENT_LIST_RE = re.compile(r"(?ms)^identifier \w+ = \{([^}]*)\};$")
WQ_FLAGS_RE = re.compile(r"(?ms)^WQ_FLAGS = frozenset\(\((.*?)\)\)$")


@pytest.mark.parametrize("path", COCCI, ids=lambda p: p.name)
def test_cocci_calls_are_the_api_entry_points(path):
    text = path.read_text(encoding="utf-8")
    metavars = {n.strip() for m in IDENT_RE.finditer(text) for n in m.group(1).split(",")}
    calls = [(m.group(1), [a.strip() for a in m.group(2).split(",")]) for m in CALL_RE.finditer(text)
             if m.group(1) not in metavars]
    names = {name for name, _ in calls}
    assert names, "the rule matches no call"
    for name, args in calls:
        if name in api.QUEUE_CALLS_BY_NAME:
            queue_arg = api.QUEUE_CALLS_BY_NAME[name].queue_arg
            if "Q" in args:
                assert args.index("Q") == queue_arg, f"{name}(): the queue is argument {queue_arg + 1}"
            continue
        entry = api.BY_NAME.get(name)
        assert entry is not None and entry.public, f"{name}() is not a public entry point of wqlint.api"
        if "f" in args and entry.flags_arg >= 0:
            assert args.index("f") == entry.flags_arg, f"{name}(): flags are argument {entry.flags_arg + 1}"
        if entry.kind != "function":
            continue
        if "m" in args:
            assert args.index("m") == entry.max_active_arg, f"{name}(): max_active is argument {entry.max_active_arg + 1}"
    functions = {n for n in names if n in api.BY_NAME and api.BY_NAME[n].kind == "function"}
    if functions:  # a rule that matches allocation calls matches every one callers write
        assert functions == set(api.PUBLIC_FUNCTIONS)
    ordered = {n for n in names if n in api.ORDERED_MACROS}
    if ordered:  # and every ordered form, when it looks at them
        assert ordered == set(api.ORDERED_MACROS)
    queues = {n for n in names if n in api.QUEUE_CALLS_BY_NAME}
    if queues:
        assert queues == set(api.QUEUE_CALLS_BY_NAME)
    legacy = {n for n in names if n in api.BY_NAME and api.BY_NAME[n].legacy}
    if path.stem == "legacy-create-workqueue":
        assert legacy == set(api.LEGACY_MACROS)
    for m in IDENT_LIST_RE.finditer(text):  # the API's own allocation functions
        assert {n.strip() for n in m.group(1).split(",")} == set(api.SINKS)


@pytest.mark.parametrize("path", COCCI, ids=lambda p: p.name)
def test_cocci_flags_are_the_api_flags(path):
    m = WQ_FLAGS_RE.search(path.read_text(encoding="utf-8"))
    assert m, "the shared helpers name the WQ_* flags"
    assert set(re.findall(r'"(\w+)"', m.group(1))) == {name for name, _bit, _since in api.FLAG_BITS}


@pytest.mark.parametrize("path", COCCI, ids=lambda p: p.name)
def test_cocci_cpu_counts_are_the_api_cpu_counts(path):
    m = CPU_RE_LINE.search(path.read_text(encoding="utf-8"))
    if m is None:
        pytest.skip("the rule reads no CPU count")
    assert expand(m.group(1)) == set(api.CPU_COUNT_ALL)


def test_expand_reads_alternatives():
    assert expand(r"\b(?:num_(?:online|possible)_cpus|NR_CPUS)\b") == {
        "num_online_cpus", "num_possible_cpus", "NR_CPUS"}


def test_entry_points_and_sinks():
    assert api.SINKS["alloc_workqueue_noprof"] == (1, 2)
    assert api.SINKS["devm_alloc_workqueue"] == (2, 3)
    assert "alloc_ordered_workqueue" not in api.SINKS  # found from the tree's own macro
    assert set(api.LEGACY_MACROS) == {"create_workqueue", "create_freezable_workqueue",
                                      "create_singlethread_workqueue"}


@pytest.mark.parametrize("version, percpu, alloc_hooks, max_active", [
    ((6, 1, 0), False, False, 512), ((6, 12, 0), False, False, 512), ((7, 3, 0), True, True, 2048)])
def test_builtin_header_follows_the_version(version, percpu, alloc_hooks, max_active):
    text = api.builtin_header(version).decode()
    assert ("WQ_PERCPU =" in text) is percpu
    assert ("alloc_hooks(alloc_workqueue_noprof(__VA_ARGS__))" in text) is alloc_hooks
    assert f"WQ_MAX_ACTIVE = {max_active}," in text


def test_loose_files_use_the_builtin_header_of_the_target_version(tmp_path):
    """No tree header: WQ_PERCPU exists only where the target version has it."""
    src = tmp_path / "drv.c"
    src.write_text('#include <linux/workqueue.h>\n'
                   'int f(void) { return !alloc_workqueue("drv", WQ_MEM_RECLAIM, 0); }\n')
    old, _ = scan_json(src, "--kernel-version", "6.1")
    new, _ = scan_json(src, "--kernel-version", "7.3")
    assert [f["rule"] for f in old["findings"]] == []
    assert [(f["rule"], f["line"]) for f in new["findings"]] == [("missing-affinity-flag", 2)]


def test_variadic_macro_chain_names_the_forwarded_argument():
    doc, result = scan_json(REPO / "tests" / "fixtures" / "mainline")
    assert result.exit_code == 1 and not doc["errors"]
    f = next(f for f in doc["findings"] if f["path"] == "drivers/vq/vq.c" and f["line"] == 18)
    assert [(s["path"], s["line"], s["note"]) for s in f["chain"]] == [
        ("drivers/vq/vq.c", 18, "calls vq_alloc_wq()"),
        ("drivers/vq/vq.c", 6, "alloc_workqueue_noprof(flags '__VA_ARGS__[1]', max_active '__VA_ARGS__[2]')"),
        ("drivers/vq/vq.c", 6, "argument 3 is argument 3 of vq_alloc_wq() through __VA_ARGS__"),
        ("drivers/vq/vq.c", 18, "'__VA_ARGS__[2]' <- argument 3 'num_online_cpus()' of vq_alloc_wq()"),
        ("drivers/vq/vq.c", 18, "CPU count num_online_cpus()"),
    ]


def test_catalogue_registry_cocci_and_marks_agree():
    """A rule is its module (named after its id) plus its catalogue entry; the .cocci files and
    the fixture marks name only rules that exist."""
    from annotations import marks
    from conftest import FIXTURES
    from wqlint import catalogue, checks

    ids = {rule.id for rule in catalogue.load().rules}
    assert set(checks.REGISTRY) == ids
    for rule, module in checks.REGISTRY.items():
        assert module.__name__.rsplit(".", 1)[1] == rule.replace("-", "_")
        assert module.READS and (module.READS <= {"flags", "max_active"}
                                 or module.READS in ({"queue"}, {"name"}, {"flow"}))
    assert {p.stem for p in COCCI} <= ids
    for tree in (REPO / "examples" / "demo-tree", FIXTURES / "rules", FIXTURES / "mainline",
                 FIXTURES / "mainline-6.12"):
        expected, forbidden = marks(tree)
        assert {rule for _, _, rule in expected | forbidden} <= ids, tree
