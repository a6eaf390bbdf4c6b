"""Struct fields: a field read resolved to the assignments reaching it in its function (a local
object), else to every assignment to a field of that name on the same struct type in the
subsystem (through initialisers too)."""
from __future__ import annotations

import re

from wqlint.finding import Origin, Via
from wqlint.scan import parser
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import norm, short
from wqlint.scan.index import TreeIndex
from wqlint.scan.nearness import related, subsystem_occurrences
from wqlint.scan.reaching import Reaching
from wqlint.scan.scope import Scope, scope_of, step_at, step_of
from wqlint.scan.structs import PENDING, Structs
from wqlint.scan.values import MAX_OPTIONS, Alt, Unknown, Value, has_pending


class Fields:
    """Struct fields, for one Resolver; caches the assignments found per field and type."""

    def __init__(self, index: TreeIndex, ask: Asking, structs: Structs, reaching: Reaching):
        self.index = index
        self.ask = ask
        self.structs = structs
        self.reaching = reaching
        self._field_cache: dict = {}

    def forget_pending(self) -> None:
        """Forget the assignments found before a name they depend on had been looked up."""
        cache = self._field_cache
        for key in [k for k, opts in cache.items() if any(has_pending(o) for o in opts)]:
            del cache[key]

    def field(self, node, scope: Scope, depth, seen, expand_params) -> Value:
        fname = parser.text(node.child_by_field_name("field"))
        base = node.child_by_field_name("argument")
        base_text = parser.text(base)
        if self.ask.naming:
            return Unknown(step_of(scope, node, f"'{base_text}' field '{fname}'"),
                           f"field '{fname}' (not followed for a name)")
        lhs_text = norm(parser.text(node))
        base_type = self.structs.type_of(base, scope)
        if base_type is PENDING:
            return Unknown(step_of(scope, node, f"'{base_text}' field '{fname}'"),
                           f"type of '{short(base_text)}' not looked up yet", pending=True)
        # Fields of a local object assigned in this function: those assignments decide.
        if scope.node is not None and base is not None and base.type == "identifier" \
                and parser.text(base) in scope.local_decls():
            states = self.reaching.flow(scope, node, lambda left: left is not None and left.type == "field_expression"
                                 and norm(parser.text(left)) == lhs_text, lambda d: False)
            if states is not None:
                return self.reaching.from_states(states, f"'{lhs_text}'", scope, depth, seen, expand_params,
                                          lambda n: Unknown(None, f"'{lhs_text}' before any assignment"))
            body = scope.node.child_by_field_name("body")
            defs = []
            for _, caps in (parser.matches("assignments", body) if body is not None else []):
                if "assign" in caps and norm(parser.text(caps["assign.left"])) == lhs_text \
                        and caps["assign"].end_byte <= node.start_byte:
                    defs.append(caps)
            if defs:
                opts = []
                for caps in defs[-MAX_OPTIONS:]:
                    rhs = caps["assign.right"]
                    val = self.ask.resolve(rhs, scope, depth + 1, seen, expand_params)
                    opts.append(Alt(step_of(scope, caps["assign"], f"'{lhs_text}' = '{short(parser.text(rhs))}'"),
                                    (val,), ""))
                return opts[0] if len(opts) == 1 else Alt(None, tuple(opts), f"{len(opts)} assignments to '{lhs_text}'")
        return self.field_values(fname, base_type, scope.src, depth + 1, seen,
                                 step_of(scope, node, f"'{base_text}' field '{fname}'", Origin(Via.FIELD, fname)),
                                 base_text)

    def field_values(self, fname, base_type, near, depth, seen, use_step, base_text="") -> Value:
        key = ("field", fname, base_type)
        if key in seen:
            return Unknown(use_step, f"field '{fname}' depends on itself")
        ckey = (fname, base_type, near.rel, self.ask.home, base_text if base_type is None else "")
        cached = self._field_cache.get(ckey)
        if cached is not None:
            return self._field_value(fname, cached, use_step)
        seen = seen | {key}
        # Only assignments in the subsystem of the allocation or of the use are followed
        # (see related()), so only those files are searched.
        occ = subsystem_occurrences(self.index, self.ask.home, fname, near.rel)
        fb = re.escape(fname.encode())
        line_re = re.compile(rb"(->|\.)\s*" + fb + rb"\s*(=(?!=)|\|=|\+=|-=)|^\s*\." + fb + rb"\s*=")
        options: list[Value] = []
        for rel, line in occ:
            src = self.index.source(rel)
            if src is None or not line_re.search(src.line_bytes(line)):
                continue
            chunk = src.chunk_at(line)
            for _node, rhs, sc, obj in self._field_defs(fname, chunk, line):
                if not (related(rel, self.ask.home) or related(rel, near.rel)):
                    continue
                note = f"field '{fname}' = '{short(parser.text(rhs))}'"
                # The same struct type when both sides can be typed; else only an assignment
                # in the same subsystem directory, and the chain says why it was taken.
                typ = None
                if base_type is not None:
                    typ = self.structs.initializer_type(obj, sc) if obj.type == "initializer_pair" \
                        else self.structs.type_of(obj, sc)
                if typ is PENDING:
                    options.append(Unknown(None, f"type of '{short(parser.text(obj))}' not looked up yet",
                                           pending=True))
                    continue
                if base_type is not None and typ is not None:
                    same = self.structs.same_type(base_type, typ, near)
                    if same is PENDING:
                        options.append(Unknown(None, f"type '{typ}' not looked up yet", pending=True))
                        continue
                    if not same:
                        continue
                elif not related(rel, near.rel):
                    continue
                elif base_type is None:
                    note += f" (the type of '{short(base_text, 40)}' is not known: taken as the same subsystem)"
                else:
                    what = "the initialised object" if obj.type == "initializer_pair" \
                        else f"'{short(parser.text(obj), 40)}'"
                    note += f" (the type of {what} is not known: taken as the same subsystem)"
                val = self.ask.resolve(rhs, sc, depth + 1, seen, expand_params=True)
                options.append(Alt(step_at(src, line, note), (val,), ""))
            if len(options) >= MAX_OPTIONS:
                break
        # The assignments are shared by every read of the field; the step of the read is not.
        self._field_cache[ckey] = tuple(options)
        return self._field_value(fname, tuple(options), use_step)

    @staticmethod
    def _field_value(fname, options: tuple, use_step) -> Value:
        if not options:
            return Unknown(use_step, f"no assignment to field '{fname}' found")
        return Alt(use_step, options, f"{len(options)} assignments to field '{fname}'")

    def _field_defs(self, fname, chunk, line):
        """(assignment, value, scope, object) of each assignment to field fname on line; the
        object is the initializer_pair for '.fname = value' in an initializer."""
        for _, caps in parser.matches("assignments", chunk.root):
            if "assign" in caps:
                left = caps["assign.left"]
                if left.type == "field_expression" and chunk.line_of(left) == line \
                        and parser.text(left.child_by_field_name("field")) == fname:
                    sc = scope_of(chunk, left)
                    yield caps["assign"], caps["assign.right"], sc, left.child_by_field_name("argument")
            elif "init" in caps:
                if parser.text(caps["init.field"]) == fname and chunk.line_of(caps["init.field"]) == line:
                    sc = scope_of(chunk, caps["init"])
                    yield caps["init"], caps["init.value"], sc, caps["init"]
