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
