"""scan/cpp.py: the #if conditions around a line, and deciding them for a kernel version."""
from __future__ import annotations

import pytest

from wqlint.scan.cpp import Cond, directives, evaluate

V61, V612 = (6, 1, 90), (6, 12, 3)


def unknown(name):
    return None


@pytest.mark.parametrize("expr,at_61,at_612", [
    ("LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)", False, True),
    ("LINUX_VERSION_CODE < KERNEL_VERSION(6,6,0)", True, False),
    ("LINUX_VERSION_CODE == KERNEL_VERSION(6, 1, 90)", True, False),
    ("LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 300)", False, True),  # a sublevel saturates at 255
    ("0", False, False),
    ("1 && !0", True, True),
    ("defined(X) && LINUX_VERSION_CODE > KERNEL_VERSION(7, 0, 0)", False, False),  # decided by one side
    ("defined X || LINUX_VERSION_CODE > KERNEL_VERSION(6, 0, 0)", True, True),
    ("defined(X)", None, None),
    ("IS_ENABLED(CONFIG_PM) || 0", None, None),
    ("RHEL_RELEASE_CODE >= 0x0805", None, None),
    ("LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0) ? 1 : 0", False, True),
    ("LINUX_VERSION_CODE >", None, None),
    ("010 == 8 && 0x10 == 16 && 00 == 0", True, True),  # C's octal, not Python's int(..., 0)
    ("LINUX_VERSION_CODE >= 08", None, None),  # not a C number
])
def test_evaluate(expr, at_61, at_612):
    assert (evaluate(expr, V61, unknown), evaluate(expr, V612, unknown)) == (at_61, at_612)


def test_defined_is_asked():
    asked = []
    assert evaluate("defined(FOO) && !defined BAR", V61, lambda n: asked.append(n) or n == "FOO") is True
    assert asked == ["FOO", "BAR"]


def test_directives_with_elif_else_guard_and_continuation():
    data = b"""#ifndef GUARD_H
#define GUARD_H
#if A
a();
#elif B \\
  && C
b();
#else
c();
#endif
#ifdef D
d();
#endif
#endif
"""
    lines, conds = directives(data)
    assert lines == [1, 3, 5, 8, 10, 11, 13, 14]
    assert conds[0] == ()  # the include guard is no condition
    assert conds[1] == (Cond(3, "#if A", "A", True),)
    assert conds[2] == (Cond(3, "#if A", "A", False, False), Cond(5, "#elif B    && C", "B    && C", True))
    assert conds[3] == (Cond(3, "#if A", "A", False, False), Cond(5, "#elif B    && C", "B    && C", False, False))
    assert conds[4] == ()
    assert conds[5] == (Cond(11, "#ifdef D", "defined(D)", True),)


def macros_of(table):
    """A macros() callback over {name: [(params or None, body)]}."""
    def macros(name, arity):
        got = [(p, b) for p, b in table.get(name, ())
               if (p is None) == (arity is None) and (arity is None or len(p) == arity)]
        return got or None
    return macros


VER = {"VER_MIN": [(["a", "b", "c"], "(LINUX_VERSION_CODE >= KERNEL_VERSION(a, b, c))")],
       "VER_MAX": [(["a", "b", "c"], "LINUX_VERSION_CODE < KERNEL_VERSION(a,b,c)")],
       "NEW_API": [(None, "VER_MIN(6, 9, 0)")],
       "TWO": [(["x"], "(LINUX_VERSION_CODE >= x)"), (["x"], "1")],  # two definitions
       "SELF": [(None, "SELF + 1")]}


@pytest.mark.parametrize("expr,at_61,at_612", [
    ("VER_MIN(6, 6, 0)", False, True),
    ("VER_MAX(6, 6, 0)", True, False),
    ("!VER_MIN(6,6,0) && 1", True, False),
    ("NEW_API", False, True),  # a macro whose body calls the macro
    ("TWO(0)", True, True),  # definitions that agree decide
    ("TWO(KERNEL_VERSION(6, 9, 0))", None, True),  # ... and not when they disagree
    ("VER_MIN(6, 6)", None, None),  # the wrong number of arguments
    ("UNKNOWN_MIN(6, 6, 0)", None, None),
    ("VER_MIN(CONFIG_X, 0, 0)", None, None),  # an argument the build's configuration sets
    ("SELF", None, None),  # no end to the expansion
])
def test_evaluate_through_macros(expr, at_61, at_612):
    macros = macros_of(VER)
    assert (evaluate(expr, V61, unknown, macros), evaluate(expr, V612, unknown, macros)) == (at_61, at_612)


@pytest.mark.parametrize("name,predefined_", [
    ("__GNUC__", True), ("__x86_64__", True), ("__KERNEL__", True), ("__CHECKER__", True),
    ("__has_attribute", True), ("__ASSEMBLY__", True), ("__aarch64__", True),
    ("__SIZEOF_LONG__", True), ("__FreeBSD__", True), ("__APPLE__", True),
    ("__QDMA_VF__", False), ("__WQCOMPAT_VF__", False),
])
def test_predefined(name, predefined_):
    from wqlint.scan.cpp import predefined
    assert predefined(name) is predefined_


def test_expansion_is_bounded():
    """Macros of many (agreeing) definitions each calling the next: 4^6 bodies to evaluate;
    the work stops, undecided."""
    table = {f"M{i}": [(["x"], f"M{i + 1}(x) + {k - k}") for k in range(4)] for i in range(6)}
    table["M6"] = [(["x"], "x")]
    calls = []

    def macros(name, arity):
        calls.append(name)
        return table.get(name)
    assert evaluate("M0(1) > 0", V61, unknown, macros) is None
    assert len(calls) < 300
