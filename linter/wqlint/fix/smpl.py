"""What the rules of a semantic patch (fix.cocci_gen) share: the arguments before the one an
edit changes, and the position constraint that restricts a rule to the calls wqlint resolved
(SITES_n, checked by wqlint_at() of the patch's header)."""
from __future__ import annotations


def before(i: int) -> tuple:
    """(metavariable declaration, pattern text, names bound) for the i arguments before the
    one edited; the first is always A0."""
    if i == 0:
        raise ValueError("the first argument identifies the call and is never edited")
    if i == 1:
        return "", "A0,", ["A0"]
    return f"expression list[{i - 1}] before;\n", "A0, before,", ["A0", "before"]


def where(n: int, pieces: list) -> str:
    """The position of a call whose arguments, bound to pieces, are one of SITES_n."""
    names = ", ".join(p for p in pieces if not p.startswith('"'))
    return (f"position p : script:python({names}) "
            f"{{ wqlint_at(p, [{', '.join(pieces)}], SITES_{n}) }};\n")


def arg_change(n: int, callee: str, i: int, new: str) -> tuple:
    """(metavariable declarations, position, call pattern) of rule n replacing argument i of
    callee() (bound as E) with new. The arguments after it are bound too: they tell calls apart."""
    decl, head, names = before(i)
    decl += "expression E;\nexpression list after;\n"
    return decl, where(n, ["A0", *names[1:], "E", "after"]), f"{callee}@p({head}\n-E\n+{new}\n ,after)"
