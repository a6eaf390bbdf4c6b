"""Locals: the assignments of a local variable that reach its use, path by path (flow.Flow),
or every assignment before it when the paths cannot be told apart; counters and arrays
filled by a call are not the value of their assignments."""
from __future__ import annotations

import re

from wqlint.scan import parser
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import short
from wqlint.scan.reaching import Reaching
from wqlint.scan.scope import Scope, declarator_name, step_of
from wqlint.scan.values import MAX_OPTIONS, Alt, Op, Unknown, Value


class Locals:
    """The local variables of functions, for one Resolver."""

    def __init__(self, ask: Asking, reaching: Reaching):
        self.ask = ask
        self.reaching = reaching

    def local(self, name, use, scope: Scope, depth, seen, expand_params) -> Value:
        fn = scope.node
        assert fn is not None, "a local is declared in a function"
        key = ("local", scope.src.rel, scope.chunk.first_line, fn.start_byte, name, use.start_byte)
        if key in seen:
            return Unknown(None, f"'{name}' depends on itself")
        seen = seen | {key}
        if self.ask.naming and _counted(name, scope):
            return Unknown(step_of(scope, use, f"local '{name}' is changed by ++ or --"),
                           f"local '{name}' is a counter")
        written = _array_written_by_call(name, use, scope)
        if written is not None:
            step = step_of(scope, written, f"local array '{name}' is filled by '{short(parser.text(written), 40)}'")
            fmt, more = _printed_format(written, name) if self.ask.naming else (None, [])
            printed = self.ask.resolve(fmt, scope, depth + 1, seen, expand_params) if fmt is not None else None
            args = tuple(self.ask.resolve(a, scope, depth + 1, seen, expand_params) for a in more)
            return Unknown(step, f"local array '{name}' written by a call", printed=printed, printed_args=args)
        states = self.reaching.flow(scope, use, lambda left: left is not None and left.type == "identifier"
                             and parser.text(left) == name, lambda d: declarator_name(d) == name)
        if states is not None:
            return self.reaching.from_states(
                states, f"local '{name}'", scope, depth, seen, expand_params,
                lambda n: Unknown(step_of(scope, n, f"local '{name}' is never assigned here"),
                                  f"local '{name}' without assignment"))
        return self._local_any_path(name, use, scope, depth, seen, expand_params)

    def _local_any_path(self, name, use, scope: Scope, depth, seen, expand_params) -> Value:
        """Every assignment before the use (after it, when none is: a loop), for functions
        whose paths cannot be followed one by one."""
        body = scope.node.child_by_field_name("body") if scope.node is not None else None
        defs = []  # (node, rhs, op)
        for _, caps in (parser.matches("assignments", body) if body is not None else []):
            if "assign" in caps:
                left = caps["assign.left"]
                if left.type == "identifier" and parser.text(left) == name:
                    op = parser.text(caps["assign"].child_by_field_name("operator"))
                    defs.append((caps["assign"], caps["assign.right"], op))
            elif "decl" in caps:
                if declarator_name(caps["decl.declarator"]) == name:
                    defs.append((caps["decl"], caps["decl.value"], "="))
        before = [d for d in defs if d[0].end_byte <= use.start_byte
                  and not (d[0].start_byte <= use.start_byte < d[0].end_byte)]
        if not before:
            before = [d for d in defs if not (d[0].start_byte <= use.start_byte < d[0].end_byte)]
        if not before:
            return Unknown(step_of(scope, use, f"local '{name}' is never assigned here"),
                           f"local '{name}' without assignment")
        live = _kill(before, use)
        options = []
        for node, rhs, op in live[-MAX_OPTIONS:]:
            rhs_value = self.ask.resolve(rhs, scope, depth + 1, seen, expand_params)
            if op != "=":
                prev = self._local_any_path(name, node, scope, depth + 1, seen, expand_params)
                rhs_value = Op(None, op[:-1], (prev, rhs_value))
            options.append(Alt(step_of(scope, node, f"local '{name}' = '{short(parser.text(rhs))}'"),
                               (rhs_value,), ""))
        if len(options) == 1:
            return options[0]
        return Alt(None, tuple(options), f"{len(options)} assignments to '{name}'")

def _counted(name: str, scope: Scope) -> bool:
    """Is the local name the operand of a ++ or -- in scope's body?"""
    body = scope.node.child_by_field_name("body") if scope.node is not None else None
    stack = [body] if body is not None else []
    while stack:
        cur = stack.pop()
        if cur.type == "update_expression":
            arg = cur.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier" and parser.text(arg) == name:
                return True
        stack.extend(cur.named_children)
    return False


def _array_written_by_call(name: str, use, scope: Scope):
    """For a local array (char buf[32] = "x"), the first call other than the one being
    resolved that is handed the array (snprintf(buf, ...), strscpy(buf, ...)): what the
    array holds then is not its initialiser. None for anything else."""
    decl = scope.local_decls().get(name)
    if decl is None:
        return None
    node = decl[0]
    inner = node.child_by_field_name("declarator") if node.type == "init_declarator" else node
    if inner is None or inner.type != "array_declarator":
        return None
    body = scope.node.child_by_field_name("body") if scope.node is not None else None
    if body is None:
        return None
    around = use
    while around is not None and around.type != "call_expression":
        around = around.parent
    stack = [body]
    while stack:
        cur = stack.pop()
        if cur.type == "call_expression" and (around is None or cur.id != around.id):
            args = cur.child_by_field_name("arguments")
            for a in (args.named_children if args is not None else []):
                if re.sub(r"[\s()&]", "", parser.text(a)) == name:
                    return cur
        stack.extend(reversed(cur.named_children))
    return None


# The C library's calls that print into the buffer of their first argument: where the format is.
_PRINTS = {"snprintf": 2, "scnprintf": 2, "sprintf": 1}


def _printed_format(call, name: str) -> tuple:
    """(the format argument of a snprintf()-like call printing into the array name, the
    arguments after it), or (None, [])."""
    fn = call.child_by_field_name("function")
    at = _PRINTS.get(parser.text(fn)) if fn is not None else None
    args = call.child_by_field_name("arguments")
    given = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
    if at is None or len(given) <= at or parser.text(given[0]) != name:
        return None, []
    return given[at], given[at + 1:]


def _kill(defs, use) -> list:
    """Drop assignments overwritten by a later one in the same block before use."""
    live = []
    for i, (node, rhs, op) in enumerate(defs):
        block = _block_of(node)
        later = [d for d in defs[i + 1:] if _block_of(d[0]) == block and d[2] == "="
                 and block is not None and _encloses(block, use)]
        if later:
            continue
        live.append((node, rhs, op))
    return live


def _block_of(node):
    cur = node.parent
    while cur is not None and cur.type not in ("compound_statement",):
        if cur.type in ("if_statement", "for_statement", "while_statement", "do_statement",
                        "switch_statement", "case_statement", "conditional_expression",
                        "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"):
            return ("cond", cur.start_byte, cur.end_byte)
        cur = cur.parent
    return ("block", cur.start_byte, cur.end_byte) if cur is not None else None


def _encloses(block, node) -> bool:
    return block[1] <= node.start_byte < block[2]
