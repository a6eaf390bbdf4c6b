"""Resolution of a C expression to a symbolic Value, following the value wherever it travels.

Locals (the assignments that reach the use), parameters (through every caller), struct
fields (every assignment in the tree to a field of the same name on a compatible type),
globals and module parameters, enumerators and #defines (the file's, then the tree's
headers), function return values, min/max/clamp and arithmetic. Nothing here knows the name
of any subsystem, file, field or wrapper: every fact comes from the C being read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from tree_sitter import Node

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import parser
from wqlint.scan.cpp import Decider
from wqlint.scan.index import TreeIndex, definition_root
from wqlint.scan.kerneltree import KERNEL_PREFIX
from wqlint.scan.source import Chunk, SourceFile
from wqlint.scan.values import (
    Alt, Cond, Const, CpuCount, Op, Param, Str, Tunable, Unknown, Value, cpu_path, substitute,
)
from wqlint.scan.flow import Flow, Keys

CPU_COUNT_CALLS = frozenset(api.CPU_COUNT_CALLS)
CPU_COUNT_NAMES = frozenset(api.CPU_COUNT_NAMES)
CPU_COUNT_STATIC = api.CPU_COUNT_STATIC
CPU_MASK_COUNT = frozenset(api.CPU_MASK_COUNT)
MINMAX = {
    "min": ("min", 0), "max": ("max", 0), "min_t": ("min", 1), "max_t": ("max", 1),
    "umin": ("min", 0), "umax": ("max", 0), "min3": ("min", 0), "max3": ("max", 0),
    "min_not_zero": ("min", 0), "clamp": ("clamp", 0), "clamp_t": ("clamp", 1),
    "clamp_val": ("clamp", 0),
}
BINOPS = {"+", "-", "*", "/", "%", "<<", ">>", "|", "&", "^"}
MAX_DEPTH = 14
MAX_OPTIONS = 48
MAX_NESTING = 200  # operators around one value; deeper is Unknown (Values stay shallow)
SITE_BUDGET = 20000  # expressions one allocation site may visit

_INT_RE = re.compile(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uUlL]*$")


def parse_int(text: str) -> Optional[int]:
    m = _INT_RE.match(text.strip())
    if not m:
        return None
    digits = m.group(1)
    if digits.lower().startswith("0x"):
        return int(digits, 16)
    if digits.startswith("0") and len(digits) > 1:
        return int(digits, 8)
    return int(digits)


_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, "'": 39, '"': 34,
            "?": 63, "e": 27}


def c_string(text: str) -> Optional[bytes]:
    """The bytes of a C string literal as written ("..." with escapes); None for a wide or
    other prefixed literal, or an escape wqlint does not know."""
    if len(text) < 2 or not text.startswith('"') or not text.endswith('"'):
        return None
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            if m is None:
                return None
            out.append(int(m.group(0), 16) & 0xFF)
            i += 2 + len(m.group(0))
        elif nxt.isdigit():
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            if m is None:
                return None
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        else:
            return None
    return bytes(out)


def declarator_name(node) -> Optional[str]:
    """The identifier a (possibly nested) declarator declares."""
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return parser.text(node)
        inner = node.child_by_field_name("declarator")
        if inner is None:
            for child in node.named_children:
                if child.type in ("identifier", "pointer_declarator", "array_declarator",
                                  "parenthesized_declarator", "function_declarator",
                                  "init_declarator", "attributed_declarator"):
                    inner = child
                    break
        node = inner
    return None


def function_declarator(fn_node):
    node = fn_node.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


def struct_type_name(type_text: str) -> Optional[str]:
    m = re.search(r"\b(struct|union)\s+([A-Za-z_]\w*)", type_text)
    if m:
        return m.group(2)
    words = re.findall(r"[A-Za-z_]\w*", type_text)
    words = [w for w in words if w not in ("const", "volatile", "static", "extern", "unsigned",
                                            "signed", "register", "inline")]
    return words[-1] if words else None


@dataclass
class Scope:
    """Where an expression sits: a function, a macro body, or file level."""

    src: SourceFile
    chunk: Chunk
    node: Optional[Node] = None  # function_definition node, or the macro's synthetic function
    name: str = ""
    kind: str = "file"  # function | macro | file
    params: list = field(default_factory=list)
    static: bool = False
    _decls: Optional[dict] = None

    def param_index(self, name: str) -> int:
        try:
            return self.params.index(name)
        except ValueError:
            return -1

    def local_decls(self) -> dict:
        """name -> (declaration node, type text) of the locals of this function."""
        if self._decls is None:
            self._decls = {}
            if self.node is not None:
                body = self.node.child_by_field_name("body")
                if body is not None:
                    for _, caps in parser.matches("declarations", body):
                        decl = caps.get("declaration")
                        if decl is None:
                            continue
                        type_text = parser.text(caps.get("decl.type"))
                        for child in decl.children_by_field_name("declarator"):
                            name = declarator_name(child)
                            if name:
                                ptr = "*" if "pointer" in child.type or (
                                    child.type == "init_declarator"
                                    and "pointer" in (child.child_by_field_name("declarator").type)) else ""
                                self._decls.setdefault(name, (child, type_text + ptr))
        return self._decls

    def param_types(self) -> dict:
        out = {}
        if self.kind == "function" and self.node is not None:
            fdecl = function_declarator(self.node)
            plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
            for p in (plist.named_children if plist is not None else []):
                if p.type == "parameter_declaration":
                    name = declarator_name(p.child_by_field_name("declarator"))
                    if name:
                        out[name] = parser.text(p.child_by_field_name("type"))
        return out


def _macro_param(p: str) -> str:
    """A macro parameter's name: `...` is __VA_ARGS__ (spelt __va in a parsed body), `args...`
    is args."""
    return "__va" if p == "..." else (p[:-3].strip() if p.endswith("...") else p)


def scope_of(chunk: Chunk, node) -> Scope:
    """The function (or macro) around node."""
    src = chunk.source
    cur = node
    while cur is not None and cur.type != "function_definition":
        cur = cur.parent
    if cur is None:
        return Scope(src, chunk)
    fdecl = function_declarator(cur)
    name = declarator_name(fdecl.child_by_field_name("declarator")) if fdecl is not None else ""
    params = []
    plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
    for p in (plist.named_children if plist is not None else []):
        if p.type in ("parameter_declaration", "variadic_parameter"):
            params.append(declarator_name(p.child_by_field_name("declarator")) or "")
        elif p.type == "identifier":  # macro parameters
            params.append(parser.text(p))
    head = parser.text(cur)[:200]
    kind = getattr(chunk, "macro_kind", None) or "function"
    return Scope(src, chunk, cur, name or "", kind, params, static=bool(re.match(r"\s*static\b", head)))


_OPERATORS = frozenset({"unary_expression", "binary_expression", "conditional_expression"})


def _structure(node):
    """The operand nodes of an expression whose Value is made from theirs (parentheses,
    casts, unary and binary operators wqlint evaluates, ?:, comma), or None for a leaf."""
    t = node.type
    if t == "parenthesized_expression":
        return [c for c in node.named_children if c.type != "comment"][:1]
    if t == "cast_expression":
        return [node.child_by_field_name("value")]
    if t == "unary_expression":
        return [node.child_by_field_name("argument")]
    if t == "binary_expression":
        if parser.text(node.child_by_field_name("operator")) not in BINOPS:
            return None
        return [node.child_by_field_name("left"), node.child_by_field_name("right")]
    if t == "conditional_expression":
        return [node.child_by_field_name("consequence"), node.child_by_field_name("alternative")]
    if t == "comma_expression":
        return [node.child_by_field_name("right")]
    return None


class Resolver:
    """Resolves expressions to Values against a TreeIndex. One per run; caches lookups."""

    def __init__(self, index: TreeIndex):
        self.index = index
        self._symbol_cache: dict = {}
        self._field_cache: dict = {}
        self._macro_chunks: dict = {}
        self._keys: dict = {}
        self._struct_cache: dict = {}
        self.budget = SITE_BUDGET
        self.home = ""  # the file of the allocation being resolved
        self.cpp: Optional[Decider] = None  # definitions in branches not compiled are not used
        self.conditional_steps: set = set()  # steps of definitions chosen by a decided #if
        # While a queue's name is resolved: a local that ++ or -- changes (a loop counter) is
        # not the value of its assignments, which is all flow.Flow sees; a struct field is not
        # followed (its assignments in the tree miss what snprintf() or strscpy() wrote, and
        # searching the tree for every field a name prints would cost much for nothing).
        self.naming = False

    def new_round(self) -> None:
        """Forget answers that were given before their names had been looked up."""
        for key in [k for k, v in self._symbol_cache.items() if _has_pending(v)]:
            del self._symbol_cache[key]
        for key in [k for k, opts in self._field_cache.items() if any(_has_pending(o) for o in opts)]:
            del self._field_cache[key]

    # -- entry -------------------------------------------------------------------------
    def resolve(self, node, scope: Scope, depth: int = 0, seen: frozenset = frozenset(),
                expand_params: bool = False) -> Value:
        """The Value of expression node. Its structure (parentheses, casts, operators, ?:) is
        walked with an explicit stack, so any nesting the parser accepts is safe; only names
        (calls, identifiers, fields) recurse, at most MAX_DEPTH deep."""
        if node is None:
            return Unknown(None, "missing expression")
        if depth > MAX_DEPTH:
            return Unknown(None, "chain too long")
        results: list = []
        todo = [(node, False, 0)]
        while todo:
            n, combine, level = todo.pop()
            if combine:
                k = len(_structure(n))
                args = results[len(results) - k:]
                del results[len(results) - k:]
                results.append(self._combine(n, args, scope))
                continue
            self.budget -= 1
            if self.budget < 0:
                results.append(Unknown(None, "too many paths to follow"))
                continue
            if n is None:
                results.append(Unknown(None, "missing expression"))
                continue
            kids = _structure(n)
            if kids is None:
                results.append(self._leaf(n, scope, depth, seen, expand_params))
            elif level >= MAX_NESTING:
                results.append(Unknown(None, f"expression nested more than {MAX_NESTING} levels"))
            else:
                todo.append((n, True, level))
                # parentheses, casts and commas add no node to the Value: not counted
                deeper = level + (n.type in _OPERATORS)
                todo.extend((k, False, deeper) for k in reversed(kids))
        return results[0]

    def _combine(self, node, args: list, scope: Scope) -> Value:
        """The Value of a structural node from the Values of its _structure() children."""
        t = node.type
        if t == "parenthesized_expression":
            return args[0] if args else Unknown(None, "empty parentheses")
        if t in ("cast_expression", "comma_expression"):
            return args[0]
        if t == "unary_expression":
            op = parser.text(node.child_by_field_name("operator"))
            arg = args[0]
            return {"-": lambda: Op(None, "neg", (arg,)), "~": lambda: Op(None, "~", (arg,)),
                    "!": lambda: Op(None, "!", (arg,)), "+": lambda: arg}.get(op, lambda: Unknown(None, op))()
        if t == "binary_expression":
            return Op(None, parser.text(node.child_by_field_name("operator")), (args[0], args[1]))
        # conditional_expression: each option is told apart by the condition (see values.Cond)
        cond_node = node.child_by_field_name("condition")
        cond = parser.text(cond_node)
        key, yes, no, shown = self.keys(scope).decision(cond_node)
        guards = ((Cond(key, yes, self._step(scope, node, f"'{shown}' is true")),),
                  (Cond(key, no, self._step(scope, node, f"'{shown}' is false")),))
        return Alt(self._step(scope, node, f"conditional on '{_short(cond)}'"), (args[0], args[1]), "ternary",
                   guards)

    def _leaf(self, node, scope: Scope, depth: int, seen: frozenset, expand_params: bool) -> Value:
        t = node.type
        if t == "number_literal":
            v = parse_int(parser.text(node))
            return Const(None, v) if v is not None else Unknown(None, f"literal {parser.text(node)}")
        if t == "binary_expression":  # an operator wqlint does not evaluate
            return Unknown(None, f"'{parser.text(node.child_by_field_name('operator'))}' expression")
        if t == "call_expression":
            return self._call(node, scope, depth, seen, expand_params)
        if t == "identifier":
            return self._identifier(node, scope, depth, seen, expand_params)
        if t == "field_expression":
            return self._field(node, scope, depth, seen, expand_params)
        if t in ("sizeof_expression", "alignof_expression"):
            return Unknown(None, "sizeof")
        if t == "string_literal":
            text = c_string(parser.text(node))
            return Str(None, text) if text is not None else Unknown(None, f"literal {_short(parser.text(node))}")
        if t == "concatenated_string":  # "a" "b", or DRV_NAME "_wq": joined at compile time
            parts = tuple(self.resolve(c, scope, depth, seen, expand_params) for c in node.named_children
                          if c.type != "comment")
            return Op(None, "cat", parts)
        return Unknown(None, f"{t.replace('_', ' ')} '{_short(parser.text(node))}'")

    # -- helpers ---------------------------------------------------------------------------
    def keys(self, scope: Scope) -> Keys:
        """The identity of the decisions in scope's body (see values.Cond)."""
        node = scope.node
        if node is None:
            return Keys(None, (scope.src.rel, "file"))
        fn = (scope.src.rel, scope.chunk.first_line, node.start_byte)
        got = self._keys.get(fn)
        if got is None:
            got = self._keys[fn] = Keys(node.child_by_field_name("body"), fn)
        return got

    def flow(self, scope: Scope, use, is_target, declares) -> Optional[list]:
        """The assignments reaching use along each path through scope's body (flow.Flow)."""
        body = scope.node.child_by_field_name("body") if scope.node is not None else None
        if body is None:
            return None
        dead = None
        cpp = self.cpp
        if cpp is not None:
            dead = lambda n: cpp.state(scope.src, scope.chunk.line_of(n))[0]
        return Flow(body, use, is_target, declares, lambda n, note: self._step(scope, n, note),
                    self.keys(scope), dead).run()

    def from_states(self, states, label, scope, depth, seen, expand_params, unset) -> Value:
        """The value of an lvalue from the paths reaching its use: one option per path,
        each told apart by the decisions that lead there."""
        memo: dict = {}
        options = []
        # In the order of the text, as the assignments were listed before paths were told apart.
        states = sorted(states, key=lambda st: st.defs[-1].node.start_byte if st.defs else -1)
        for st in states:
            v: Optional[Value] = None
            for d in st.defs:
                if d.node.id not in memo:
                    memo[d.node.id] = self.resolve(d.rhs, scope, depth + 1, seen, expand_params)
                rhs = memo[d.node.id]
                if d.op in ("<=", "<"):  # a condition on the way caps it (flow.Flow.bounds)
                    cap = rhs if d.op == "<=" else Op(None, "-", (rhs, Const(None, 1)))
                    how = "at most" if d.op == "<=" else "below"
                    v = Alt(self._step(scope, d.node, f"{label} is {how} '{_short(parser.text(d.rhs))}' here"),
                            (Op(None, "min", (v, cap)),), "assignment")
                    continue
                if d.op != "=":
                    rhs = Op(None, d.op[:-1], (v if v is not None else unset(d.node), rhs))
                v = Alt(self._step(scope, d.node, f"{label} = '{_short(parser.text(d.rhs))}'"), (rhs,),
                        "assignment")
            assert v is not None, "Flow.run() keeps only the paths with an assignment"
            options.append(v)
        if len(options) == 1:
            return options[0]
        guards = tuple(st.guards for st in states) if any(st.guards for st in states) else ()
        return Alt(None, tuple(options), f"{len(options)} assignments to {label.split(' ', 1)[-1]}", guards)

    def _step(self, scope: Scope, node, note: str) -> Step:
        line = scope.chunk.line_of(node)
        return Step(scope.src.rel, line, scope.src.line_text(line).strip(), note)

    def step_at(self, src: SourceFile, line: int, note: str) -> Step:
        return Step(src.rel, line, src.line_text(line).strip(), note)

    # -- calls -----------------------------------------------------------------------------
    def _call(self, node, scope, depth, seen, expand_params) -> Value:
        fn = node.child_by_field_name("function")
        args = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        name = parser.text(fn) if fn is not None and fn.type == "identifier" else ""
        r = lambda n: self.resolve(n, scope, depth + 1, seen, expand_params)
        if name in CPU_COUNT_CALLS:
            return CpuCount(self._step(scope, node, f"CPU count {name}()"), f"{name}()")
        if name in CPU_MASK_COUNT and args:
            mask = parser.text(args[0])
            return CpuCount(self._step(scope, node, f"CPU count {name}({mask})"), f"{name}({mask})")
        if name in MINMAX:
            op, typed = MINMAX[name]
            # min_t(type, a, b): the type is not an expression and may parse as several
            # nodes (unsigned long), so take the value arguments from the end.
            want = (3 if op == "clamp" else 2) if typed else len(args)
            vals = tuple(r(a) for a in args[len(args) - want:])
            if op == "clamp" and len(vals) != 3:
                return Unknown(None, f"{name} with {len(vals)} arguments")
            if op in ("min", "max") and len(vals) > 2:
                acc = vals[0]
                for v in vals[1:]:
                    acc = Op(None, op, (acc, v))
                return acc
            return Op(None, op, vals)
        if name == "DIV_ROUND_UP" and len(args) == 2:
            a, b = r(args[0]), r(args[1])
            return Op(None, "/", (Op(None, "-", (Op(None, "+", (a, b)), Const(None, 1))), b))
        if not name:
            return Unknown(None, f"call through '{_short(parser.text(fn))}'")
        key = ("fn", name)
        if key in seen:
            return Unknown(None, f"recursion through {name}()")
        # A helper of the subsystem may compute the limit (foo_nr_workers()); a library
        # function only matters when it transforms a CPU count passed to it. Following every
        # readl() or kzalloc() back into the core kernel would cost much and find nothing.
        if not self._defined_nearby(name, scope.src):
            bound = [r(a) for a in args]
            if not any(cpu_path(b) for b in bound):
                return Unknown(None, f"call to {name}()")
        ret = self.function_returns(name, scope, depth + 1, seen | {key})
        if ret is None:
            macro = self.macro_call(name, args, scope, depth + 1, seen | {key}, expand_params)
            if macro is not None:
                return macro
            return Unknown(None, f"call to {name}()")
        ret_value, fscope = ret
        bound = [r(a) for a in args]

        def bind(p: Param) -> Value:
            if p.function == name and 0 <= p.index < len(bound):
                return Alt(self._step(scope, node, f"{fscope.params[p.index]} <- argument "
                                                   f"{p.index + 1} '{_short(parser.text(args[p.index]))}' of {name}()"),
                           (bound[p.index],), "")
            return p
        return Alt(self._step(scope, node, f"return value of {name}()"), (substitute(ret_value, bind),), "")

    def _defined_nearby(self, name: str, src: SourceFile) -> bool:
        """Is name defined (function or macro) in src or in the allocation's subsystem?"""
        pat = re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b|^[A-Za-z_].*\b"
                         + re.escape(name.encode()) + rb"\s*\(")
        if any(pat.search(src.line_bytes(ln)) for ln in _word_lines(src, name)):
            return True
        return any(pat.search(self.index.peek(rel, ln))
                   for rel, ln in self._subsystem_occurrences(name, src.rel))

    def function_returns(self, name, scope, depth, seen):
        """(Alt of the return values of function name, its Scope), or None if not found."""
        for fscope in self.function_scopes(name, scope.src):
            rets = []
            for _, caps in parser.matches("returns", fscope.node):
                val = caps.get("return.value")
                inner = self.resolve(val, fscope, depth, seen, expand_params=False)
                rets.append(Alt(self._step(fscope, val, f"{name}() returns '{_short(parser.text(val))}'"),
                                (inner,), ""))
            if rets:
                return Alt(None, tuple(rets[:MAX_OPTIONS]), "returns"), fscope
        return None

    def function_scopes(self, name: str, near: SourceFile) -> list:
        """Definitions of function name: in near's file if there, else in the tree."""
        found = self._definitions_in(name, near, [(near.rel, ln) for ln in _word_lines(near, name)])
        if found:
            return found
        occ = self.index.occurrences(name, defs=True, near=near.rel)
        if occ is None:
            return []
        lines = [(rel, ln) for rel, ln in occ if rel != near.rel]
        return self._definitions_in(name, near, lines)

    def _definitions_in(self, name, near, occs) -> list:
        out = []
        for rel, line in occs[:400]:
            text = near.line_bytes(line) if rel == near.rel else self.index.peek(rel, line)
            if (name.encode() + b"(") not in text.replace(b" (", b"("):
                continue
            if text[:1] in (b" ", b"\t") and not text.lstrip().startswith(name.encode()):
                continue  # a call inside a body, not a definition header
            src = near if rel == near.rel else self.index.source(rel)
            if src is None:
                continue
            chunk = src.chunk_at(line)
            for _, caps in parser.matches("functions", chunk.root):
                fn = caps["fn"]
                fdecl = function_declarator(fn)
                if fdecl is None:
                    continue
                if declarator_name(fdecl.child_by_field_name("declarator")) == name:
                    out.append(scope_of(chunk, fn.child_by_field_name("body")))
            if out:
                break
        return out

    # -- macros ----------------------------------------------------------------------------
    def macro_definitions(self, name: str, near: SourceFile) -> list:
        """[(SourceFile, first_line, last_line)] of '#define name', nearest first."""
        local = [(near, ln) for ln in _word_lines(near, name)]
        defs = self._defines(name, local)
        if defs:
            return defs
        occ = self.index.occurrences(name, defs=True, near=near.rel)
        if occ is None:
            return []
        pat = re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b")
        cands = []
        for rel, line in occ:
            if pat.match(self.index.peek(rel, line)):
                src = self.index.source(rel)
                if src is not None:
                    cands.append((src, line))
        defs = self._defines(name, cands)
        return _nearest(defs, near.rel)

    def _defines(self, name, cands) -> list:
        pat = re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b")
        out = []
        for src, line in cands:
            if pat.match(src.line_bytes(line)):
                span = src.define_span(line)
                if span:
                    out.append((src, span[0], span[1]))
        return out

    def macro_chunk(self, src: SourceFile, first: int, last: int):
        """A #define parsed as a function whose body is the macro's replacement text.

        The '#define NAME(params)' head becomes 'void NAME(params){' padded to the same width and
        every continuation backslash a blank, so rows and columns still match the file.
        """
        key = (src.rel, first)
        got = self._macro_chunks.get(key)
        if got is not None:
            return got
        raw = src.slice(first, last).decode("utf-8", "replace")
        m = re.match(r"(\s*#\s*define\s+)([A-Za-z_]\w*)(\(([^)]*)\))?", raw)
        if not m:
            return None
        name, params = m.group(2), m.group(4)
        plist = [p.strip() for p in params.split(",")] if params is not None else None
        names = [_macro_param(p) for p in (plist or []) if p]
        cparams = ", ".join("long " + p for p in names) or "void"
        head = f"void {name}({cparams}){{"
        body = raw[m.end():]
        body = re.sub(r"\\\n", " \n", body).replace("##", "  ").replace("__VA_ARGS__", "__va       ")
        width = m.end()
        if len(head) < width:
            head = head + " " * (width - len(head))
        synthetic = (head + body.rstrip("\n") + "\n;}\n").encode()
        chunk = Chunk(src, first, last)
        chunk.tree = parser.parse(synthetic)
        chunk.macro_kind = "macro"
        chunk.macro_params = [_macro_param(p) for p in (plist or [])]
        chunk.macro_is_function = plist is not None
        chunk.macro_variadic = plist is not None and len(plist) > 0 and plist[-1].endswith("...")
        self._macro_chunks[key] = chunk
        return chunk

    def macro_body_scope(self, chunk) -> Optional[Scope]:
        for _, caps in parser.matches("functions", chunk.root):
            return scope_of(chunk, caps["fn"].child_by_field_name("body"))
        return None

    def macro_value_node(self, chunk):
        """The replacement text of an object-like or function-like macro as one expression."""
        scope = self.macro_body_scope(chunk)
        if scope is None:
            return None, None
        body = scope.node.child_by_field_name("body")
        stmts = [c for c in body.named_children if c.type != "comment"]
        if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children:
            return stmts[0].named_children[0], scope
        return None, scope

    def macro_call(self, name, args, scope, depth, seen, expand_params) -> Optional[Value]:
        """A function-like macro used in an expression: its body with arguments bound."""
        for src, first, last in self.macro_definitions(name, scope.src)[:4]:
            chunk = self.macro_chunk(src, first, last)
            if chunk is None or not chunk.macro_is_function:
                continue
            expr, mscope = self.macro_value_node(chunk)
            if expr is None:
                continue
            inner = self.resolve(expr, mscope, depth, seen, expand_params=False)
            bound = [self.resolve(a, scope, depth, seen, expand_params) for a in args]

            def bind(p: Param, bound=bound) -> Value:
                if p.function == name and 0 <= p.index < len(bound):
                    return bound[p.index]
                return p
            step = self.step_at(src, first, f"macro {name}() expands to '{_short(parser.text(expr))}'")
            return Alt(step, (substitute(inner, bind),), "")
        return None

    # -- identifiers -------------------------------------------------------------------------
    def _identifier(self, node, scope: Scope, depth, seen, expand_params) -> Value:
        name = parser.text(node)
        if name in CPU_COUNT_NAMES:
            return CpuCount(self._step(scope, node, f"CPU count {name}"), name)
        if name in CPU_COUNT_STATIC:
            return CpuCount(self._step(scope, node, f"CPU count {name} (CONFIG_NR_CPUS, "
                                                    f"{CPU_COUNT_STATIC[name]} on distribution kernels)"),
                            name, CPU_COUNT_STATIC[name])
        if scope.kind in ("function", "macro"):
            idx = scope.param_index(name)
            if idx >= 0:
                param = Param(self._step(scope, node, f"'{name}' is parameter {idx + 1} of {scope.name}()"),
                              scope.name, idx, name)
                if expand_params and scope.kind == "function":
                    return self.expand_param(param, scope, depth + 1, seen)
                return param
            if name in scope.local_decls():
                return self._local(name, node, scope, depth, seen, expand_params)
        return self.symbol(name, scope, depth + 1, seen)

    def _local(self, name, use, scope: Scope, depth, seen, expand_params) -> Value:
        fn = scope.node
        assert fn is not None, "a local is declared in a function"
        key = ("local", scope.src.rel, scope.chunk.first_line, fn.start_byte, name, use.start_byte)
        if key in seen:
            return Unknown(None, f"'{name}' depends on itself")
        seen = seen | {key}
        if self.naming and _counted(name, scope):
            return Unknown(self._step(scope, use, f"local '{name}' is changed by ++ or --"),
                           f"local '{name}' is a counter")
        written = _array_written_by_call(name, use, scope)
        if written is not None:
            return Unknown(self._step(scope, written, f"local array '{name}' is filled by "
                                                      f"'{_short(parser.text(written), 40)}'"),
                           f"local array '{name}' written by a call")
        states = self.flow(scope, use, lambda left: left is not None and left.type == "identifier"
                           and parser.text(left) == name, lambda d: declarator_name(d) == name)
        if states is not None:
            return self.from_states(
                states, f"local '{name}'", scope, depth, seen, expand_params,
                lambda n: Unknown(self._step(scope, n, f"local '{name}' is never assigned here"),
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
            return Unknown(self._step(scope, use, f"local '{name}' is never assigned here"),
                           f"local '{name}' without assignment")
        live = _kill(before, use)
        options = []
        for node, rhs, op in live[-MAX_OPTIONS:]:
            rhs_value = self.resolve(rhs, scope, depth + 1, seen, expand_params)
            if op != "=":
                prev = self._local_any_path(name, node, scope, depth + 1, seen, expand_params)
                rhs_value = Op(None, op[:-1], (prev, rhs_value))
            options.append(Alt(self._step(scope, node, f"local '{name}' = '{_short(parser.text(rhs))}'"),
                               (rhs_value,), ""))
        if len(options) == 1:
            return options[0]
        return Alt(None, tuple(options), f"{len(options)} assignments to '{name}'")

    def expand_param(self, param: Param, scope: Scope, depth, seen) -> Value:
        """A parameter of a function that is not the allocation's own: every caller's argument."""
        key = ("param", scope.src.rel, param.function, param.index)
        if key in seen:
            return Unknown(param.step, f"parameter '{param.name}' depends on itself")
        seen = seen | {key}
        options = []
        for call, cscope in self.call_sites(param.function, scope.src, scope.static, subsystem=True):
            args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
            if param.index >= len(args):
                continue
            if not (related(cscope.src.rel, self.home) or related(cscope.src.rel, scope.src.rel)):
                continue  # a caller in an unrelated subsystem of a shared helper
            arg = args[param.index]
            val = self.resolve(arg, cscope, depth + 1, seen, expand_params=True)
            options.append(Alt(self._step(cscope, call, f"{param.function}() called with "
                                                        f"'{param.name}' = '{_short(parser.text(arg))}'"),
                               (val,), ""))
            if len(options) >= MAX_OPTIONS:
                break
        if not options:
            return Unknown(param.step, f"no caller of {param.function}() found")
        return Alt(param.step, tuple(options), f"{len(options)} callers of {param.function}()")

    def _subsystem_occurrences(self, name: str, near: str) -> list:
        files = dict.fromkeys(self.index.related_files(self.home) + self.index.related_files(near))
        return self.index.word_occurrences_in(files, name)

    def call_sites(self, name: str, near: SourceFile, static: bool, subsystem: bool = False,
                   keep=None) -> list:
        """[(call node, Scope)] of calls to name: in near's file when static, else in the tree."""
        occs: Optional[list]
        if static:
            occs = [(near.rel, ln) for ln in _word_lines(near, name)]
        elif subsystem:
            occs = self._subsystem_occurrences(name, near.rel)
        else:
            occs = self.index.occurrences(name)
            if occs is None:
                return []
        out = []
        done = set()
        call_pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
        for rel, line in occs:
            text = near.line_bytes(line) if rel == near.rel else self.index.peek(rel, line)
            if not call_pat.search(text) or (keep is not None and not keep(rel, text)):
                continue
            src = near if rel == near.rel else self.index.source(rel)
            if src is None:
                continue
            if src.define_span(line):
                chunk = self.macro_chunk(src, *src.define_span(line))
                if chunk is None:
                    continue
            else:
                chunk = src.chunk_at(line)
            for call in calls_named(chunk, name, line):
                if (rel, call.start_byte, chunk.first_line) in done:
                    continue
                done.add((rel, call.start_byte, chunk.first_line))
                out.append((call, scope_of(chunk, call)))
        return out

    # -- globals, enumerators, macros ----------------------------------------------------
    def symbol(self, name: str, scope: Scope, depth, seen) -> Value:
        key = ("sym", name)
        if key in seen:
            return Unknown(None, f"'{name}' depends on itself")
        local = _word_lines(scope.src, name)
        ckey = (scope.src.rel if local else "", name)
        cached = self._symbol_cache.get(ckey)
        if cached is not None:
            return cached
        seen = seen | {key}
        value = self._symbol_in(name, scope.src, [(scope.src.rel, ln, scope.src.line_bytes(ln)) for ln in local],
                                depth, seen, scope)
        if value is None:
            occ = self.index.occurrences(name, defs=True, near=scope.src.rel)
            if occ is None:
                return Unknown(None, f"'{name}' not looked up yet")
            cands = [(rel, line, self.index.peek(rel, line)) for rel, line in occ if rel != scope.src.rel]
            value = self._symbol_in(name, scope.src, cands, depth, seen, scope, tree_wide=True)
        if value is None:
            value = Unknown(None, f"'{name}' not defined in the tree")
        if not self.naming:  # a name's reading of fields and counters is for names only
            self._symbol_cache[ckey] = value
        return value

    def _symbol_in(self, name, near, cands, depth, seen, use_scope, tree_wide=False) -> Optional[Value]:
        nb = re.escape(name.encode())
        define_re = re.compile(rb"^\s*#\s*define\s+" + nb + rb"\b")
        enum_re = re.compile(rb"^\s*" + nb + rb"\s*(=|,|$|/\*)")
        assign_re = re.compile(rb"(?<![.>\w])" + nb + rb"\s*(\[[^\]]*\])?\s*(=(?!=)|\|=|\+=)")
        param_re = re.compile(rb"\bmodule_param(_named)?\s*\(\s*(" + nb + rb"\s*,|\w+\s*,\s*" + nb + rb"\s*,)")
        defines, enums, assigns, tunable = [], [], [], None
        for rel, line, text in cands:
            if not (define_re.match(text) or param_re.search(text) or enum_re.match(text)
                    or assign_re.search(text)):
                continue
            src = self.index.source(rel) if rel != near.rel else near
            if src is None:
                continue
            if define_re.match(text):
                defines.append((src, line))
            elif param_re.search(text):
                tunable = (src, line)
            elif enum_re.match(text) or assign_re.search(text):
                if enum_re.match(text):
                    enums.append((src, line))
                if assign_re.search(text):
                    assigns.append((src, line))
        # A line starting with the name may be an enumerator or just a continuation line of
        # an expression: try candidates nearest first until one parses as an enumerator.
        for src, line, _ in _ranked([(s, ln, ln) for s, ln in enums], near.rel)[:64]:
            val = self._enumerator(name, src, line, depth, seen)
            if val is not None:
                return val
        if defines:
            spans, conds = self._compiled([(s, *s.define_span(ln)) for s, ln in defines])
            for src, first, last in _nearest(spans, near.rel)[:1]:
                chunk = self.macro_chunk(src, first, last)
                if chunk is None or chunk.macro_is_function:
                    continue
                expr, mscope = self.macro_value_node(chunk)
                step = self.step_at(src, first, f"macro {name} = '{_short(_define_value(src, first, last))}'"
                                    + conds.get((src.rel, first), ""))
                if (src.rel, first) in conds:
                    self.conditional_steps.add(step)
                if expr is None:
                    return Unknown(step, f"macro {name} is not an expression")
                val = self.resolve(expr, mscope, depth, seen)
                return Alt(step, (val,), "")
        if not assigns:
            return None
        options = []
        for src, line in assigns:
            if tree_wide and _is_static_decl(src, line, name):
                continue
            for _node, rhs, where in self._global_defs(name, src, line):
                val = self.resolve(rhs, where, depth, seen, expand_params=True)
                options.append(Alt(self.step_at(src, line, f"'{name}' = '{_short(parser.text(rhs))}'"),
                                   (val,), ""))
        if not options:
            return None
        value = options[0] if len(options) == 1 else \
            Alt(None, tuple(options[:MAX_OPTIONS]), f"{len(options)} assignments to '{name}'")
        if tunable:
            src, line = tunable
            return Tunable(self.step_at(src, line, f"'{name}' is a module parameter: the default can be "
                                                   "changed at load time"),
                           value, f"module parameter '{name}'")
        return value

    def _compiled(self, spans) -> tuple:
        """(the definitions among spans [(src, first, last)] that are compiled for the target
        kernel, {(rel, first): ' (under ...)'} naming the conditions decided for it)."""
        if self.cpp is None:
            return spans, {}
        kept, notes = [], {}
        for span in spans:
            dead, conds = self.cpp.state(span[0], span[1])
            if dead:
                continue
            kept.append(span)
            said = [note for _, note in self.cpp.notes(conds)]
            if said:
                notes[(span[0].rel, span[1])] = " (" + "; ".join(said) + ")"
        return kept, notes

    def _enumerator(self, name, src, line, depth, seen) -> Optional[Value]:
        chunk = src.chunk_at(line)
        for _, caps in parser.matches("defines", chunk.root):
            if "enum" not in caps or parser.text(caps["enum.name"]) != name:
                continue
            enum = caps["enum"]
            if chunk.line_of(enum) != line:
                continue
            val_node = caps.get("enum.value")
            step = self.step_at(src, line, f"enumerator {name}")
            if val_node is not None:
                return Alt(step, (self.resolve(val_node, Scope(src, chunk), depth, seen),), "")
            prev = enum.prev_named_sibling
            while prev is not None and prev.type != "enumerator":
                prev = prev.prev_named_sibling
            if prev is None:
                return Alt(step, (Const(None, 0),), "")
            pname = parser.text(prev.child_by_field_name("name"))
            return Alt(step, (Op(None, "+", (self._enumerator(pname, src, chunk.line_of(prev), depth + 1, seen)
                                             or Unknown(None, pname), Const(None, 1))),), "")
        return None

    def _global_defs(self, name, src, line):
        chunk = src.chunk_at(line)
        for _, caps in parser.matches("assignments", chunk.root):
            if "assign" in caps:
                left = caps["assign.left"]
                if left.type == "identifier" and parser.text(left) == name and chunk.line_of(left) == line:
                    yield caps["assign"], caps["assign.right"], scope_of(chunk, left)
            elif "decl" in caps:
                d = caps["decl.declarator"]
                if declarator_name(d) == name and chunk.line_of(d) == line:
                    sc = scope_of(chunk, d)
                    if sc.kind == "file":
                        yield caps["decl"], caps["decl.value"], sc

    # -- struct fields ---------------------------------------------------------------------
    def _field(self, node, scope: Scope, depth, seen, expand_params) -> Value:
        fname = parser.text(node.child_by_field_name("field"))
        base = node.child_by_field_name("argument")
        base_text = parser.text(base)
        if self.naming:
            return Unknown(self._step(scope, node, f"'{base_text}' field '{fname}'"),
                           f"field '{fname}' (not followed for a name)")
        lhs_text = _norm(parser.text(node))
        base_type = self.type_of(base, scope)
        if base_type is PENDING:
            return Unknown(self._step(scope, node, f"'{base_text}' field '{fname}'"),
                           f"type of '{_short(base_text)}' not looked up yet")
        # Fields of a local object assigned in this function: those assignments decide.
        if scope.node is not None and base is not None and base.type == "identifier" \
                and parser.text(base) in scope.local_decls():
            states = self.flow(scope, node, lambda left: left is not None and left.type == "field_expression"
                               and _norm(parser.text(left)) == lhs_text, lambda d: False)
            if states is not None:
                return self.from_states(states, f"'{lhs_text}'", scope, depth, seen, expand_params,
                                        lambda n: Unknown(None, f"'{lhs_text}' before any assignment"))
            body = scope.node.child_by_field_name("body")
            defs = []
            for _, caps in (parser.matches("assignments", body) if body is not None else []):
                if "assign" in caps and _norm(parser.text(caps["assign.left"])) == lhs_text \
                        and caps["assign"].end_byte <= node.start_byte:
                    defs.append(caps)
            if defs:
                opts = []
                for caps in defs[-MAX_OPTIONS:]:
                    rhs = caps["assign.right"]
                    val = self.resolve(rhs, scope, depth + 1, seen, expand_params)
                    opts.append(Alt(self._step(scope, caps["assign"], f"'{lhs_text}' = '{_short(parser.text(rhs))}'"),
                                    (val,), ""))
                return opts[0] if len(opts) == 1 else Alt(None, tuple(opts), f"{len(opts)} assignments to '{lhs_text}'")
        return self.field_values(fname, base_type, scope.src, depth + 1, seen,
                                 self._step(scope, node, f"'{base_text}' field '{fname}'"), base_text)

    # -- struct types ------------------------------------------------------------------------
    def type_of(self, obj, scope: Scope, depth: int = 0):
        """The struct (or typedef) name of the object of a field access, None when it cannot
        be told, PENDING while a struct definition it needs has not been looked up yet.

        Declared locals, parameters and globals of the file; '->' and '.' chains through the
        members of the struct definitions; subscripts, '*' and '&'; casts; container_of()."""
        if obj is None or depth > 8:
            return None
        t = obj.type
        if t == "identifier":
            name = parser.text(obj)
            decl = scope.local_decls().get(name)
            if decl:
                return struct_type_name(decl[1])
            ptypes = scope.param_types()
            if name in ptypes:
                return struct_type_name(ptypes[name])
            if scope.param_index(name) >= 0:
                return None  # a macro parameter: any type
            return self._global_type(name, scope.src)
        if t in ("parenthesized_expression", "pointer_expression", "subscript_expression"):
            inner = obj.child_by_field_name("argument") if t != "parenthesized_expression" else \
                next((c for c in obj.named_children if c.type != "comment"), None)
            return self.type_of(inner, scope, depth + 1)
        if t == "cast_expression":
            return struct_type_name(parser.text(obj.child_by_field_name("type")))
        if t == "field_expression":
            outer = self.type_of(obj.child_by_field_name("argument"), scope, depth + 1)
            if outer is None or outer is PENDING:
                return outer
            return self.member_type(outer, parser.text(obj.child_by_field_name("field")), scope.src)
        if t == "call_expression":
            fn = parser.text(obj.child_by_field_name("function"))
            # container_of(ptr, type, member): a type is no expression, so read the text.
            args = _split_args(parser.text(obj.child_by_field_name("arguments"))[1:-1])
            if fn.startswith("container_of") and len(args) == 3:
                return struct_type_name(args[1])
        return None

    def _global_type(self, name: str, src: SourceFile) -> Optional[str]:
        """The type of a variable declared at file level in src."""
        for line in _word_lines(src, name):
            text = src.line_bytes(line)
            if text[:1] in (b" ", b"\t") or b"(" in text.split(name.encode())[0]:
                continue
            chunk = src.chunk_at(line)
            for _, caps in parser.matches("declarations", chunk.root):
                decl = caps.get("declaration")
                if decl is None or decl.parent is None or decl.parent.type != "translation_unit":
                    continue
                for child in decl.children_by_field_name("declarator"):
                    if declarator_name(child) == name:
                        return struct_type_name(parser.text(caps.get("decl.type")))
        return None

    def struct_body(self, tag: str, near: SourceFile):
        """The field_declaration_list of 'struct tag { ... }' (or of a typedef named tag), the
        definition nearest to near; None when there is none, PENDING until looked up."""
        key = ("struct", tag, near.rel)
        if key in self._struct_cache:
            return self._struct_cache[key]
        cands = [(near, ln) for ln in _word_lines(near, tag)]
        found = self._struct_in(tag, cands)
        if found is None:
            occ = self.index.occurrences(tag, defs=True, near=near.rel)
            if occ is None:
                return PENDING
            pat = re.compile(rb"^\s*(typedef\s+)?(struct|union)\s+" + re.escape(tag.encode()) + rb"\b|^\s*\}\s*"
                             + re.escape(tag.encode()) + rb"\s*;")
            more = []
            for rel, line in occ:
                if rel != near.rel and pat.search(self.index.peek(rel, line)):
                    src = self.index.source(rel)
                    if src is not None:
                        more.append((src, line))
            ranked = _nearest([(src, line) for src, line in more], near.rel)
            found = self._struct_in(tag, ranked)
        self._struct_cache[key] = found
        return found

    def _struct_in(self, tag: str, cands):
        walked = set()
        for src, line in cands:
            chunk = src.chunk_at(line)
            if id(chunk) in walked:
                continue  # several lines of one chunk name the tag: its nodes were seen
            walked.add(id(chunk))
            for node in parser.descendants(chunk.root):
                if node.type not in ("struct_specifier", "union_specifier"):
                    continue
                body = node.child_by_field_name("body")
                if body is None:
                    continue
                name = node.child_by_field_name("name")
                if name is not None and parser.text(name) == tag:
                    return body
                parent = node.parent
                if name is None and parent is not None and parent.type == "type_definition" and any(
                        declarator_name(d) == tag for d in parent.children_by_field_name("declarator")):
                    return body
        return None

    def member_type(self, tag: str, member: str, near: SourceFile):
        """The struct name of member of struct tag; None when not a struct or not found."""
        body = self.struct_body(tag, near)
        if body is None or body is PENDING:
            return body
        found = _member_decl(body, member)
        return struct_type_name(found) if found is not None else None

    def same_type(self, a: str, b: str, near: SourceFile):
        """Are two struct or typedef names the same type? PENDING while unknown."""
        if a == b:
            return True
        ca, cb = self._canonical(a, near), self._canonical(b, near)
        if ca is PENDING or cb is PENDING:
            return PENDING
        return ca == cb

    def _canonical(self, name: str, near: SourceFile):
        """A typedef name as the tag of the struct it names ('typedef struct foo foo_t')."""
        body = self.struct_body(name, near)
        if body is None or body is PENDING:
            return name if body is None else PENDING
        tag = body.parent.child_by_field_name("name")
        return parser.text(tag) if tag is not None else name

    def initializer_type(self, pair, scope: Scope, depth: int = 0):
        """The struct type an initializer_pair '.field = value' initialises a field of."""
        return self._list_type(pair.parent, scope, depth)

    def _list_type(self, lst, scope: Scope, depth: int):
        if lst is None or depth > 8:
            return None
        parent = lst.parent
        if parent is None:
            return None
        if parent.type == "init_declarator":
            decl = parent.parent
            t = decl.child_by_field_name("type") if decl is not None else None
            return struct_type_name(parser.text(t)) if t is not None else None
        if parent.type == "compound_literal_expression":
            return struct_type_name(parser.text(parent.child_by_field_name("type")))
        if parent.type == "initializer_list":  # an element of an array of structs
            return self._list_type(parent, scope, depth + 1)
        if parent.type == "initializer_pair":
            outer = self._list_type(parent.parent, scope, depth + 1)
            designator = parent.child_by_field_name("designator")
            if outer is None or outer is PENDING or designator is None:
                return outer
            if designator.type != "field_designator":
                return outer  # [i] = { ... }: an element
            field = next((c for c in designator.named_children if c.type == "field_identifier"), None)
            return self.member_type(outer, parser.text(field), scope.src) if field is not None else None
        return None

    def field_values(self, fname, base_type, near, depth, seen, use_step, base_text="") -> Value:
        key = ("field", fname, base_type)
        if key in seen:
            return Unknown(use_step, f"field '{fname}' depends on itself")
        ckey = (fname, base_type, near.rel, self.home, base_text if base_type is None else "")
        cached = self._field_cache.get(ckey)
        if cached is not None:
            return self._field_value(fname, cached, use_step)
        seen = seen | {key}
        # Only assignments in the subsystem of the allocation or of the use are followed
        # (see related()), so only those files are searched.
        occ = self._subsystem_occurrences(fname, near.rel)
        fb = re.escape(fname.encode())
        line_re = re.compile(rb"(->|\.)\s*" + fb + rb"\s*(=(?!=)|\|=|\+=|-=)|^\s*\." + fb + rb"\s*=")
        options: list[Value] = []
        for rel, line in occ:
            src = self.index.source(rel)
            if src is None or not line_re.search(src.line_bytes(line)):
                continue
            chunk = src.chunk_at(line)
            for _node, rhs, sc, obj in self._field_defs(fname, chunk, line):
                if not (related(rel, self.home) or related(rel, near.rel)):
                    continue
                note = f"field '{fname}' = '{_short(parser.text(rhs))}'"
                # The same struct type when both sides can be typed; else only an assignment
                # in the same subsystem directory, and the chain says why it was taken.
                typ = None
                if base_type is not None:
                    typ = self.initializer_type(obj, sc) if obj.type == "initializer_pair" \
                        else self.type_of(obj, sc)
                if typ is PENDING:
                    options.append(Unknown(None, f"type of '{_short(parser.text(obj))}' not looked up yet"))
                    continue
                if base_type is not None and typ is not None:
                    same = self.same_type(base_type, typ, near)
                    if same is PENDING:
                        options.append(Unknown(None, f"type '{typ}' not looked up yet"))
                        continue
                    if not same:
                        continue
                elif not related(rel, near.rel):
                    continue
                elif base_type is None:
                    note += f" (the type of '{_short(base_text, 40)}' is not known: taken as the same subsystem)"
                else:
                    what = "the initialised object" if obj.type == "initializer_pair" \
                        else f"'{_short(parser.text(obj), 40)}'"
                    note += f" (the type of {what} is not known: taken as the same subsystem)"
                val = self.resolve(rhs, sc, depth + 1, seen, expand_params=True)
                options.append(Alt(self.step_at(src, line, note), (val,), ""))
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


PENDING = type("Pending", (), {"__repr__": lambda self: "PENDING"})()


def _member_decl(body, member: str) -> Optional[str]:
    """The type text of member in a struct body (through anonymous structs and #ifdefs)."""
    for child in body.named_children:
        if child.type == "field_declaration":
            decls = child.children_by_field_name("declarator")
            typ = child.child_by_field_name("type")
            for d in decls:
                if declarator_name(d) == member:
                    return parser.text(typ)
            if not decls and typ is not None and typ.type in ("struct_specifier", "union_specifier") \
                    and typ.child_by_field_name("body") is not None and typ.child_by_field_name("name") is None:
                found = _member_decl(typ.child_by_field_name("body"), member)
                if found is not None:
                    return found
        elif child.type.startswith("preproc_"):
            found = _member_decl(child, member)
            if found is not None:
                return found
    return None


def _split_args(text: str) -> list:
    """Top-level comma-separated parts of an argument list's text."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    out.append(cur.strip())
    return out




def calls_named(chunk: Chunk, name: str, line: Optional[int] = None) -> list:
    out = []
    for _, caps in parser.matches("calls", chunk.root):
        if parser.text(caps["call.name"]) != name:
            continue
        if line is not None and chunk.line_of(caps["call.name"]) != line:
            continue
        out.append(caps["call"])
    return out


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


def _word_lines(src: SourceFile, name: str) -> list:
    return src.word_lines(name)


def _ranked(defs, rel: str) -> list:
    """Definitions by rank (see _nearest), all ranks but 'elsewhere'."""
    ranked = sorted(((_rank(d[0].rel, rel), d) for d in defs), key=lambda x: x[0])
    return [d for r, d in ranked if r < 5]


def _rank(r: str, rel: str) -> int:
    directory = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if r == rel:
        return 0
    if directory and r.startswith(directory + "/") and "/" not in r[len(directory) + 1:]:
        return 1
    if not directory and "/" not in r:
        return 1  # both at the top: a module's own directory
    shared = r[len(KERNEL_PREFIX):] if r.startswith(KERNEL_PREFIX) else r
    if shared.startswith("include/") or re.match(r"arch/[^/]+/include/", shared):
        return 2  # the tree's shared headers, or those of the kernel a module builds for
    if r.startswith("<wqlint>/"):
        return 4
    root = definition_root(rel)
    if root != "/*" and r.startswith(root + "/"):
        return 3
    return 5


def _nearest(defs, rel: str) -> list:
    """The best-ranked definitions (see _rank); none when the only ones are elsewhere."""
    ranked = sorted(defs, key=lambda d: _rank(d[0].rel, rel))
    if not ranked or _rank(ranked[0][0].rel, rel) == 5:
        return []  # only unrelated definitions elsewhere in the tree: do not guess
    best = _rank(ranked[0][0].rel, rel)
    return [d for d in ranked if _rank(d[0].rel, rel) == best]


def _is_static_decl(src: SourceFile, line: int, name: str) -> bool:
    return bool(re.match(rb"\s*static\b.*\b" + re.escape(name.encode()) + rb"\b", src.line_bytes(line)))


def _define_value(src, first, last) -> str:
    raw = src.slice(first, last).decode("utf-8", "replace")
    raw = re.sub(r"\\\n", " ", raw)
    m = re.match(r"\s*#\s*define\s+[A-Za-z_]\w*(\([^)]*\))?", raw)
    return raw[m.end():].strip() if m else raw.strip()


def _has_pending(value: Value) -> bool:
    from wqlint.scan.values import walk
    return any(isinstance(v, Unknown) and v.why.endswith("not looked up yet") for v in walk(value))


def related(a: str, b: str) -> bool:
    """Are two files part of the same subsystem?

    Same directory, one directory inside the other, or siblings one level apart
    (fs/btrfs and fs/btrfs/tests; not drivers/net/ethernet/x and drivers/net/ethernet/y).
    Values found through a shared layer (a PCI helper, a core header) in an unrelated
    driver say nothing about this driver's call, so such paths are not followed.
    """
    da, db = a.split("/")[:-1], b.split("/")[:-1]
    if da == db:
        return True
    n = 0
    while n < min(len(da), len(db)) and da[n] == db[n]:
        n += 1
    if n < 2:
        return False
    return n == len(da) or n == len(db)


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
