"""How the parts meet: the scanner resolves sites and knows no rule; each rule decides where
it judges from what it READS."""
from __future__ import annotations

import ast
import shutil
from types import SimpleNamespace

import pytest

from conftest import FIXTURES, REPO
from wqlint import catalogue, checks, lint
from wqlint.finding import Origin, Step, Via

PACKAGE = REPO / "linter" / "wqlint"


def _imported(path) -> set:
    """The modules a Python file imports, by their full names (from a import b: a and a.b)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


# The layers of the package, lowest first: a module imports only modules of its own layer or
# of a lower one, and no import circle, in any layer. A name matches exactly, or as PACKAGE.*
# (any module of the package but those named exactly elsewhere).
LAYERS = (
    # the errors' base, the API's model, the one Finding type, reading files, running tools,
    # the catalogue and a tree's settings: no analysis
    ("base", ("wqlint", "wqlint.errors", "wqlint.api", "wqlint.finding", "wqlint.safeio", "wqlint.tools",
              "wqlint.project_files", "wqlint.code_id", "wqlint.kversion", "wqlint.machine", "wqlint.config",
              "wqlint.fix_kinds", "wqlint.catalogue")),
    # what the scanner resolves and the rules judge: values and the kinds of site
    ("scan data", ("wqlint.scan.values", "wqlint.scan.site")),
    ("scan", ("wqlint.scan", "wqlint.scan.*")),
    ("checks", ("wqlint.checks", "wqlint.checks.*")),
    # the runs that put the scanner and the rules to work, and what they take in
    ("drivers", ("wqlint.lint", "wqlint.review", "wqlint.review_paths", "wqlint.intake", "wqlint.mail",
                 "wqlint.inbox", "wqlint.b4review", "wqlint.cocci", "wqlint.patched", "wqlint.fix", "wqlint.fix.*",
                 "wqlint.check.*")),
    ("formatters", ("wqlint.formatters", "wqlint.formatters.*")),
    # the command lines: `wqlint` (click) and `wqlint check` (Kbuild's checker)
    ("commands", ("wqlint.cli", "wqlint.cli_phases", "wqlint.entry", "wqlint.__main__", "wqlint.check")),
)


def _modules() -> dict:
    """{full name: path} of the package's modules (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _import_graph() -> dict:
    """{module: {module it imports: line}} of every import statement of the package, at any
    level (in a function, under TYPE_CHECKING), by full names: `from a import b` is an import
    of a.b when that is a module, else of a."""
    modules = _modules()
    graph: dict = {}
    for name, path in modules.items():
        arrows = graph.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    arrows.setdefault(target, node.lineno)
    return graph


def _layer(module: str) -> int:
    for exact in (True, False):
        for i, (_, names) in enumerate(LAYERS):
            for pattern in names:
                if (module == pattern) if exact else (pattern.endswith(".*") and module.startswith(pattern[:-1])):
                    return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _circles(graph: dict) -> list:
    """The sets of two or more modules that import one another, directly or not (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(frozenset(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_circle():
    graph = _import_graph()
    assert len(graph) > 90 and "wqlint.scan.engine" in graph["wqlint.lint"]
    for circle in _circles(graph):
        arrows = sorted(f"{a} -> {b} (line {graph[a][b]})" for a in circle for b in graph[a] if b in circle)
        raise AssertionError("import circle: " + "; ".join(arrows))


def test_no_module_imports_a_higher_layer():
    """The layers (LAYERS) are a stack: the catalogue knows no rule, the kinds of site are
    data the scanner makes and the rules read, the scanner knows no rule and the rules no run,
    and nothing below the command lines knows them (a command hands its options over)."""
    up = []
    for module, arrows in sorted(_import_graph().items()):
        for target, line in sorted(arrows.items()):
            if _layer(target) > _layer(module):
                up.append(f"{module} ({LAYERS[_layer(module)][0]}) imports {target} "
                          f"({LAYERS[_layer(target)][0]}), line {line}")
    assert not up, "\n".join(up)


def _private_to(module: str) -> str:
    """The package a module is private to ('' when it is not private): the one holding its
    first component with a leading underscore (wqlint.checks._flags: wqlint.checks)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return ""


def test_no_module_imports_another_s_private_names():
    """A name with a leading underscore is its module's own, and a module so named is its
    package's: what two modules share has a public name."""
    found = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("wqlint"):
                imported = [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                imported = [(a.name, "") for a in node.names if a.name.startswith("wqlint")]
            else:
                continue
            for module, what in imported:
                owner = _private_to(module)
                if (what.startswith("_") and not what.startswith("__")) \
                        or (owner and not name.startswith(owner + ".")):
                    found.append(f"{name}, line {node.lineno}: {module} {what}".rstrip())
    assert not found, "\n".join(found)


def test_the_scanner_imports_no_rule():
    files = sorted((PACKAGE / "scan").glob("*.py"))
    assert len(files) > 10
    for path in files:
        rules = {m for m in _imported(path) if m == "wqlint.checks" or m.startswith("wqlint.checks.")}
        assert not rules, f"{path.name} imports {rules}"


def test_the_scanner_names_no_rule():
    for path in sorted((PACKAGE / "scan").glob("*.py")):
        text = path.read_text()
        named = sorted(rule for rule in checks.RULE_IDS if rule in text)
        assert not named, f"{path.name} names {named}"


WRAPPED = """\
#include <linux/workqueue.h>

static struct workqueue_struct *demo_alloc(int n)
{
\treturn alloc_workqueue("demo", WQ_PERCPU, n);
}

int demo_a(void) { return !demo_alloc(num_online_cpus()); }
int demo_b(void) { return !demo_alloc(4); }
"""


@pytest.fixture
def wrapped(tmp_path):
    """A tree whose wrapper decides the flags and the name, its callers max_active."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "mainline", tree)
    (tree / "drivers" / "demo").mkdir()
    (tree / "drivers" / "demo" / "demo.c").write_text(WRAPPED)
    return tree


@pytest.mark.parametrize("reads, lines", [
    ({"flags"}, [5]),
    ({"name"}, [5]),
    ({"flags", "name"}, [5]),
    ({"max_active"}, [8, 9]),
    ({"flags", "max_active"}, [8, 9]),
    ({"flags", "max_active", "name"}, [8, 9]),
])
def test_a_rule_judges_where_what_it_reads_is_decided(wrapped, monkeypatch, reads, lines):
    """A rule registered with any READS of an allocation's parts is judged at the wrapper
    when all it reads is decided there, else at each caller, once either way: nothing in the
    scanner names it."""
    seen = []
    rule = SimpleNamespace(RULE="demo-rule", READS=frozenset(reads),
                           check=lambda site, ctx: seen.append(site.line) or [])
    monkeypatch.setattr(checks, "_ON_SITES", (rule,))
    cat = catalogue.load(REPO / "rules.yaml")
    lint.scan([str(wrapped / "drivers" / "demo")], cat)
    assert sorted(seen) == lines


def _bits_of(paths, cat):
    from wqlint.scan.engine import Engine, ScanOptions
    from wqlint.scan.targets import Targets
    return Engine(Targets([str(p) for p in paths]), cat, ScanOptions()).analysis().bits


def test_a_flag_added_to_the_api_model_is_resolved_from_the_tree(tmp_path, monkeypatch):
    """A flag is one line of api.FLAG_BITS: the scanner resolves it from the scanned tree's
    header, and from wqlint's own header for loose files, with nothing else changed."""
    from wqlint import api
    cat = catalogue.load(REPO / "rules.yaml")
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "mainline", tree)
    header = tree / "include" / "linux" / "workqueue.h"
    text = header.read_text()
    assert "WQ_DEMO" not in text
    header.write_text(text.replace("\tWQ_PERCPU\t\t= 1 << 8,\n", "\tWQ_PERCPU\t\t= 1 << 8,\n\tWQ_DEMO\t\t\t= 1 << 12,\n"))
    (tree / "drivers" / "demo").mkdir()
    (tree / "drivers" / "demo" / "demo.c").write_text(WRAPPED)
    loose = tmp_path / "loose.c"
    loose.write_text(WRAPPED)
    with pytest.raises(KeyError):
        _bits_of([tree / "drivers" / "demo"], cat).bit("WQ_DEMO")

    monkeypatch.setattr(api, "FLAG_BITS", api.FLAG_BITS + (("WQ_DEMO", 11, (6, 1)),))
    bits = _bits_of([tree / "drivers" / "demo"], cat)
    assert bits.bit("WQ_DEMO") == 1 << 12  # as the tree defines it
    # (this header's __WQ_BH_ALLOWS has WQ_PERCPU: WQ_BH alone says nothing of affinity)
    assert bits.bit("__WQ_BH_ALLOWS") & bits.bit("WQ_PERCPU") and bits.affinity == (1 << 8) | (1 << 1)
    assert _bits_of([loose], cat).bit("WQ_DEMO") == 1 << 11  # as wqlint's header for the version has it


def _sample(hint):
    """A value of the declared type hint, for every type a field of a Value declares."""
    import dataclasses
    import enum
    import typing

    from wqlint.scan.values import Const, Value
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Union:
        return _sample(args[-1])  # (Optional[x]: x; a decision's key: its tuple)
    if typing.get_origin(hint) is tuple:
        return (_sample(args[0]), _sample(args[0]))
    if hint is Step:
        return Step("drivers/demo/demo.c", 5, "x = 1;", "'x' = '1'", ("demo_alloc", 0), Origin(Via.MACRO, "X"))
    if isinstance(hint, type) and issubclass(hint, Value):
        return Const(_sample(Step), 7)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return list(hint)[-1]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{f.name: _sample(hints[f.name]) for f in dataclasses.fields(hint)})
    return {int: 3, str: "demo", bytes: b"\xffq\x00", bool: True}[hint]


def test_every_kind_of_value_is_kept_in_the_facts():
    """The facts keep every kind of Value (each subclass of values.Value, with every field
    its equality compares) and give it back equal, through the index's codec: a new kind
    needs no line in check/facts.py. The Steps' paths come back as the checker shows them."""
    import dataclasses
    import json
    import typing

    from wqlint.check import facts
    from wqlint.scan.site import NameArgs, Site
    from wqlint.scan.values import Op, Value, walk
    kinds = []
    todo = list(Value.__subclasses__())
    while todo:
        kinds.append(todo.pop())
        todo.extend(kinds[-1].__subclasses__())
    assert len(kinds) >= 8
    parts = []
    for cls in kinds:
        hints = typing.get_type_hints(cls)
        parts.append(cls(**{f.name: _sample(hints[f.name]) for f in dataclasses.fields(cls) if f.compare}))
    value = Op(None, "+", tuple(parts) + (None, parts[0]))  # a None among the args; a node met twice
    site = Site("demo_alloc", "drivers/demo/demo.c", 5, 2, 12, value, parts[0], [_sample(Step)],
                via=["demo_alloc"], name=NameArgs(value, (parts[1],), step=_sample(Step)))
    data = json.loads(json.dumps(facts.encode_sites([site])))
    (shown,) = facts.decode_sites(data, "/src/drivers/demo/demo.c", lambda p: "/src/" + p)
    assert shown.path == "/src/drivers/demo/demo.c" and shown.prefix[0].path == "/src/drivers/demo/demo.c"
    (got,) = facts.decode_sites(data, site.path, lambda p: p)
    assert got == site
    back = got.flags
    assert back == value
    assert [type(v) for v in walk(back) if v is not None] == [type(v) for v in walk(value) if v is not None]
    assert {type(v) for v in walk(back)} >= set(kinds)
    origins = [v.step.origin for v in walk(back) if v is not None and v.step is not None]
    assert origins and all(o == Origin(Via.MACRO, "X") for o in origins)


# Exceptions that never leave the code that raises them: a search's or a parse's way out, the
# reason a fix is not made (reported as "not fixed"), not an error a command stops on.
SIGNALS = {"GiveUp", "NoEdit", "_Found", "_NotOneLine", "_TooMuch", "_Unknown"}


def test_every_error_derives_from_the_one_base():
    """An error a command can stop on derives from wqlint.errors.WqlintError, which says its
    exit status; wqlint.errors itself imports nothing of wqlint."""
    direct = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or node.name in SIGNALS | {"WqlintError"}:
                continue
            bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                     for b in node.bases}
            if bases & {"Exception", "RuntimeError", "ValueError"} and "WqlintError" not in bases:
                direct.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert not direct
    assert not {m for m in _imported(PACKAGE / "errors.py") if m.startswith("wqlint")}
