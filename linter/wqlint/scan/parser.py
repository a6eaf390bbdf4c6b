"""tree-sitter-c set-up and the .scm queries, loaded once as package data.

Differences between tree-sitter binding versions are handled here and nowhere else.
"""
from __future__ import annotations

import threading
from functools import lru_cache
from importlib import resources
from typing import Any

import tree_sitter
import tree_sitter_c


@lru_cache(maxsize=None)
def language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_c.language())


_local = threading.local()


def _parser() -> tree_sitter.Parser:
    """One parser per thread: a tree-sitter Parser must not be shared between threads."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        try:
            parser = tree_sitter.Parser(language())
        except TypeError:  # bindings before 0.22 take the language through an attribute
            legacy: Any = tree_sitter.Parser()  # Any: the installed bindings type the newer API only
            legacy.set_language(language())
            parser = legacy
        _local.parser = parser
    return parser


def parse(source: bytes) -> tree_sitter.Tree:
    return _parser().parse(source)


@lru_cache(maxsize=None)
def query(name: str) -> tree_sitter.Query:
    # One name per joinpath(): Traversable.joinpath() takes a single child before Python 3.11.
    text = resources.files("wqlint.scan").joinpath("queries").joinpath(f"{name}.scm").read_text(encoding="utf-8")
    try:
        return tree_sitter.Query(language(), text)
    except TypeError:  # bindings that build a query through the language
        lang: Any = language()
        return lang.query(text)


_MATCHES: dict = {}  # (query or kind, node) -> matches(), of_kind_kept(): for one scan's trees (forget())


def forget() -> None:
    """Drop what matches() keeps: the nodes it holds keep their whole trees alive, so a
    process that scans again (a review's two scans, a program using wqlint) would hold every
    tree it ever parsed. Safe at any time: what is asked again is worked out again."""
    _MATCHES.clear()


def matches(name: str, node: tree_sitter.Node) -> list:
    """[(pattern_index, {capture: node})] with one node per capture, in document order.

    Cached per node, with the node: its tree lives as long as the answer, so no other tree
    takes its place in memory and its node's id (a place there) while it is kept, even when
    the files the trees are of are let go (scan.index.TreeIndex.release_sources()).
    """
    key = (name, node.id, node.start_byte, node.end_byte)
    got = _MATCHES.get(key)
    if got is None:
        got = _MATCHES[key] = (node, _matches(name, node))
    return got[1]


def _matches(name: str, node: tree_sitter.Node) -> list:
    q = query(name)
    if hasattr(tree_sitter, "QueryCursor"):
        raw = tree_sitter.QueryCursor(q).matches(node)
    else:  # bindings before 0.25 match through the query itself
        legacy: Any = q
        raw = legacy.matches(node)
    out = []
    for index, caps in raw:
        out.append((index, {k: (v[0] if isinstance(v, list) else v) for k, v in caps.items()}))
    return out


def descendants(node):
    """node and every named node below it, in the order of the text; iterative, so a deep
    expression cannot exhaust the stack."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def of_kind(node, kind: str) -> list:
    """The nodes of a kind at or below node, in the order of the text."""
    return [n for n in descendants(node) if n.type == kind]


def of_kind_kept(node, kind: str) -> list:
    """of_kind(), kept with the matches until forget(): for a node read again and again (a
    function whose every call a chain passes)."""
    key = ("kind " + kind, node.id, node.start_byte, node.end_byte)
    got = _MATCHES.get(key)
    if got is None:
        got = _MATCHES[key] = (node, of_kind(node, kind))  # (kept with its node: see matches())
    return got[1]


def callee(call) -> str:
    """The name a call_expression calls, when it calls a name ("" for a pointer)."""
    fn = call.child_by_field_name("function")
    return text(fn) if fn is not None and fn.type == "identifier" else ""


def args(call) -> list:
    """The argument nodes of a call_expression, without comments."""
    lst = call.child_by_field_name("arguments")
    return [a for a in lst.named_children if a.type != "comment"] if lst is not None else []


def inner(node, through: tuple = ("parenthesized_expression", "pointer_expression")):
    """node without what of through is around it: by default the parentheses, the
    address-of and the dereference."""
    while node is not None and node.type in through:
        node = node.child_by_field_name("argument") if node.type == "pointer_expression" else \
            next((c for c in node.named_children if c.type != "comment"), None)
    return node


def unparen(text: str) -> str:
    """text without blanks around it and without parentheses that enclose all of it."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0
