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


def arg_metavar(arg: str) -> str:
    """The metavariable an argument pattern stands for: `f@pf` and `<+... Q@q ...+>` are f, Q."""
    return re.sub(r"@\w+", "", arg.replace("<+...", "").replace("...+>", "")).strip()


# `identifier call;`: a metavariable standing for a call already matched by name.
IDENT_RE = re.compile(r"(?m)^identifier ([\w, ]+);$")
# `identifier fn = {a, b};`: a metavariable standing for any of those names (called as
# `fn@p(...)`, or the functions a rule looks for the definitions of).
IDENT_SET_RE = re.compile(r"(?ms)^identifier (\w+) = \{([^}]*)\};$")


@pytest.mark.parametrize("path", COCCI, ids=lambda p: p.name)
def test_cocci_calls_are_the_api_entry_points(path):
    text = path.read_text(encoding="utf-8")
    metavars = {n.strip() for m in IDENT_RE.finditer(text) for n in m.group(1).split(",")}
    # `identifier fn = {a, b};` then `fn@p(...)`: a call of each of a and b
    sets = {m.group(1): m.group(2).replace("\n", " ").replace("\t", " ").split(",")
            for m in IDENT_SET_RE.finditer(text)}
    calls = [(name.strip(), [arg_metavar(a) for a in m.group(2).split(",")]) for m in CALL_RE.finditer(text)
             if m.group(1) in sets or m.group(1) not in metavars for name in sets.get(m.group(1), [m.group(1)])]
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
    for name, members in sets.items():  # the API's own allocation functions, all of them
        listed = {n.strip() for n in members}
        if re.search(rf"\b{name}@p\s*\(", text):
            continue  # a set of calls, checked as calls above
        if listed & set(api.SINKS):
            assert listed == set(api.SINKS)


# The flags a rule knows, with the ones it leaves out of its list on purpose: the affinity
# flags (and for a per-CPU queue, WQ_POWER_EFFICIENT, which the command line can make unbound).
KNOWN_FLAGS_LEAVE_OUT = {
    "missing-affinity-flag": {"WQ_UNBOUND", "WQ_PERCPU", "WQ_BH"},
    "percpu-max-active-cpu-count": {"WQ_UNBOUND", "WQ_BH", "WQ_POWER_EFFICIENT"},
}
KNOWN_FLAGS_RE = re.compile(r"(?ms)^global idexpression g != \{(.*?)\};$")


def smpl(path) -> str:
    """A .cocci file without its comment lines."""
    return "\n".join(l for l in path.read_text(encoding="utf-8").splitlines() if not l.startswith("//"))


@pytest.mark.parametrize("path", COCCI, ids=lambda p: p.name)
def test_cocci_flags_are_the_api_flags(path):
    api_flags = {name for name, _bit, _since in api.FLAG_BITS}
    text = smpl(path)
    assert set(re.findall(r"\b__?WQ_[A-Z_]+\b", text)) <= api_flags
    m = KNOWN_FLAGS_RE.search(text)
    assert (m is not None) == (path.stem in KNOWN_FLAGS_LEAVE_OUT)
    if m:
        known = {n.strip() for n in m.group(1).split(",")}
        assert known | KNOWN_FLAGS_LEAVE_OUT[path.stem] == api_flags
        assert not known & KNOWN_FLAGS_LEAVE_OUT[path.stem]
    if path.stem == "internal-workqueue-flag":
        assert set(re.findall(r"\b__WQ_[A-Z_]+\b", text)) == {n for n in api_flags if n.startswith("__")}


@pytest.mark.parametrize("path", COCCI, ids=lambda p: p.name)
def test_cocci_cpu_counts_are_the_api_cpu_counts(path):
    m = re.search(r"(?ms)^@n@\n.*?^@@\n\n(.*?)\n\n", smpl(path))
    if m is None:
        pytest.skip("the rule reads no CPU count")
    assert set(re.findall(r"(\w+)@pn", m.group(1))) == set(api.CPU_COUNT_ALL)


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
    from conftest import FIXTURES, RULES
    from wqlint import catalogue, checks

    ids = {rule.id for rule in catalogue.load().rules}
    assert set(checks.REGISTRY) == ids
    for rule, module in checks.REGISTRY.items():
        assert module.__name__.rsplit(".", 1)[1] == rule.replace("-", "_")
        assert module.READS and (module.READS <= {"flags", "max_active"}
                                 or module.READS in ({"queue"}, {"name"}, {"flow"}, {"wait"}))
    assert {p.stem for p in COCCI} <= ids
    for tree in (REPO / "examples" / "demo-tree", RULES, FIXTURES / "rules",
                 FIXTURES / "mainline", FIXTURES / "mainline-6.12"):
        expected, forbidden = marks(tree)
        assert {rule for _, _, rule in expected | forbidden} <= ids, tree
