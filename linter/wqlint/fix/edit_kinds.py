"""The edit kinds rules.yaml names (fix.targets ... edit), a class each. Its apply() makes the
edit in the model of one call (fix.edits.Call) and records it there as an instance of the
class, whose fields say what the edit did at that call; smpl() writes the semantic patch's
rule for it (fix.cocci_gen). EDITS is the registry, by name, in the order of fix_kinds.NAMES.

Kinds that make the same change to an argument share a base, and so their rule: AddFlag
(add-percpu, add-reclaim: flags or-ed into an argument), SetArg (drop-percpu, percpu-default,
clamp: an argument's new text)."""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import ClassVar, Optional

from wqlint import api
from wqlint.finding import Finding
from wqlint import fix_kinds as kinds
from wqlint.fix import edits, layout, smpl
from wqlint.fix.edits import Call, NoEdit, TreeFacts
from wqlint.fix.model import Edit
from wqlint.scan import parser

ALLOCATORS = api.PUBLIC_FUNCTIONS  # calls that make the queue where they stand
# Lower precedence than '|': such a flags expression is parenthesised before '| WQ_PERCPU'.
_LOW_PRECEDENCE = ("conditional_expression", "assignment_expression", "comma_expression")
_LOOPS = ("for_statement", "while_statement", "do_statement")
_BODY_OF = ("if_statement", "else_clause", "while_statement", "for_statement", "do_statement")


@dataclass(frozen=True)
class EditKind:
    """A kind of edit; an instance, the edit as made at one call."""

    name: ClassVar[str] = ""  # as rules.yaml names it ("" for a base of kinds)
    rule: ClassVar[str]  # the name of its rule in the semantic patch (before the rule's number)
    shared: ClassVar[bool] = False  # one rule for every call given the same edit (else one per call)

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        """Make the edit in call and record it in call.ops; NoEdit says why it cannot be made."""
        raise NotImplementedError

    @classmethod
    def refusal(cls, finding: Finding) -> Optional[str]:
        """Why this kind cannot fix finding, when its facts already tell (before any file is read)."""
        return None

    def smpl(self, n: int, count: int) -> str:
        """Rule n of the semantic patch: this edit, made at count calls."""
        raise NotImplementedError

    def rank(self) -> int:
        """Where its rule goes: -1 before the others, 1 after them, 0 among them."""
        return 0

    def as_tuple(self) -> tuple:
        """(rule, the fields in order): the rules of a semantic patch are ordered by its repr."""
        return (self.rule, *(getattr(self, f.name) for f in fields(self)))


# -- flags --------------------------------------------------------------------------------

@dataclass(frozen=True)
class AddFlag(EditKind):
    """flags (one, or several joined by |) added to argument `arg`, written as they were (0
    becomes the flags: variant zero) or or-ed after them, in parentheses (paren) or not (plain)."""

    rule = "add-flag"
    shared = True

    callee: str
    arg: int
    flags: str
    variant: str

    @classmethod
    def add(cls, call: Call, i: int, flags: str) -> None:
        call.ops.append(cls(call.name, i, flags, with_flags(call, i, flags)))

    def rank(self) -> int:
        # WQ_MEM_RECLAIM is added last, after an affinity flag another rule adds to the same
        # flags, as `wqlint fix` makes the edits (fix_kinds.NAMES).
        return 1 if self.flags == api.RESCUER_FLAG else 0

    def smpl(self, n: int, count: int) -> str:
        new = {"zero": self.flags, "paren": f"(E) | {self.flags}", "plain": f"E | {self.flags}"}[self.variant]
        decl, where, call = smpl.arg_change(n, self.callee, self.arg, new)
        what = ("whose queue a reclaim queue's work waits for" if self.flags == api.RESCUER_FLAG
                else "without an affinity flag")
        return (f"// {count} call(s) of {self.callee}() {what}: add {self.flags}\n"
                f"@add_flag_{n}@\nexpression A0;\n{decl}{where}@@\n"
                f" {call}\n")


@dataclass(frozen=True)
class AddPercpu(AddFlag):
    name = "add-percpu"

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        if not facts.has_percpu:
            raise NoEdit("this tree does not define WQ_PERCPU")
        if finding.hints.flags_conditional:
            raise NoEdit("some values of the flags already have WQ_UNBOUND or WQ_PERCPU: decide per value")
        i = finding.flags_arg
        if i < 0 or i >= len(call.args):
            raise NoEdit(f"the flags are set inside {inner(call)}, not at this call")
        cls.add(call, i, "WQ_PERCPU")


@dataclass(frozen=True)
class AddReclaim(AddFlag):
    """WQ_MEM_RECLAIM added to the flags of the queue a reclaim queue's work waits for, at its
    one allocation (the hints of reclaim-flush-dependency say where and which argument)."""

    name = "add-reclaim"

    @classmethod
    def refusal(cls, finding: Finding) -> Optional[str]:
        """The check found no allocation to edit (hints.no_fix): the finding's own advice says
        why (rules.yaml, the migration case of that reason)."""
        if finding.hints.no_fix is None:
            return None
        return finding.migration or "no single allocation to give WQ_MEM_RECLAIM"

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        reason = cls.refusal(finding)
        if reason is not None:
            raise NoEdit(reason)
        i = finding.hints.edit_arg if finding.hints.edit_arg is not None else -1
        if i < 0 or i >= len(call.args):
            raise NoEdit(f"the flags are set inside {inner(call)}, not at this call")
        node = call.node.parent
        while node is not None and node.type != "function_definition":
            if node.type in _LOOPS:
                raise NoEdit("the flushed queue is allocated in a loop, one queue per iteration: WQ_MEM_RECLAIM "
                             "would give each a rescuer thread; decide by hand")
            node = node.parent
        if i in call.changed and api.RESCUER_FLAG in operands(call.args[i]):
            return  # another finding's fix gives the same queue WQ_MEM_RECLAIM
        cls.add(call, i, api.RESCUER_FLAG)


@dataclass(frozen=True)
class MoveFlag(EditKind):
    """flag-as-max-active: the flags written as max_active moved into the flags (after any
    another fix adds there) and max_active 0, the default, in one edit of the two arguments,
    as upstream fixed drm/xe's (aa39abc08e77). flags: those not in the flags already
    (variant keep when there are none; else as AddFlag's)."""

    name = "move-flag"
    rule = "move-flag"

    callee: str
    arg: int  # the flags; max_active is the next
    flags: str
    variant: str

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        fi, mi = finding.flags_arg, finding.max_active_arg
        if fi < 0 or mi != fi + 1 or mi >= len(call.args):
            raise NoEdit(f"the flags and max_active are set inside {inner(call)}, not at this call")
        written = operands(call.args[mi])
        if not written or not all(o in api.FLAG_NAMES for o in written):
            raise NoEdit("max_active is not written as flags at this call: move the flag where it is set")
        if mi in call.changed:
            raise NoEdit("another fix of this call already changes max_active")
        missing = " | ".join(o for o in written if o not in operands(call.args[fi]))
        variant = with_flags(call, fi, missing) if missing else "keep"
        call.set_arg(mi, "0")
        call.ops.append(cls(call.name, fi, missing, variant))

    def smpl(self, n: int, count: int) -> str:
        decl, before, names = smpl.before(self.arg)
        where = smpl.where(n, ["A0", *names[1:], "F", "M", "after"])
        new = {"keep": None, "zero": self.flags, "paren": f"(F) | {self.flags}",
               "plain": f"F | {self.flags}"}[self.variant]
        edit = " F,\n" if new is None else f"-F\n+{new}\n ,\n"
        return (f"// a flag written as max_active of {self.callee}(): moved into the flags, max_active 0\n"
                f"@move_flag_{n}@\nexpression A0;\n{decl}expression F, M;\nexpression list after;\n{where}@@\n"
                f" {self.callee}@p({before}\n{edit}-M\n+0\n ,after)\n")


def operands(text: str) -> list:
    """The operands of flags written as a | b | c."""
    return [layout.normalize(o) for o in layout.split_top(parser.unparen(text), "|")]


def with_flags(call: Call, i: int, flags: str) -> str:
    """flags added to argument i, after what another fix of the same call added there (never
    over another kind of change); the form of the edit for the semantic patch: zero (the
    argument was 0), paren or plain."""
    old = call.args[i]
    if i in call.changed:
        if not any(isinstance(op, AddFlag) and op.arg == i for op in call.ops):
            raise NoEdit("another fix of this call already changes that argument")
        call.args[i] = with_flag(old, None, flags)
    else:
        call.set_arg(i, with_flag(old, call.arg_nodes[i], flags))
    return "zero" if old.strip() == "0" else "paren" if call.args[i].startswith("(") else "plain"


def with_flag(text: str, node, flag: str) -> str:
    if text.strip() == "0":
        return flag
    if "||" not in text and re.search(r"\S\||\|\S", text):
        # The line changes anyway: space the operators as checkpatch asks.
        text = " | ".join(layout.normalize(o) for o in layout.split_top(text, "|"))
    low = node is not None and (node.type in _LOW_PRECEDENCE or (
        node.type == "binary_expression" and parser.text(node.child_by_field_name("operator")) in ("||", "&&")))
    return f"({text}) | {flag}" if low else f"{text} | {flag}"


# -- an argument's new text ---------------------------------------------------------------

@dataclass(frozen=True)
class SetArg(EditKind):
    """Argument `arg` of `callee` becomes text."""

    rule = "arg"

    callee: str
    arg: int
    text: str

    @classmethod
    def set(cls, call: Call, i: int, text: str) -> None:
        call.set_arg(i, text)
        call.ops.append(cls(call.name, i, call.args[i]))

    def smpl(self, n: int, count: int) -> str:
        decl, where, call = smpl.arg_change(n, self.callee, self.arg, self.text)
        return (f"// argument {self.arg + 1} of {self.callee}() -> {self.text}\n"
                f"@arg_{n}@\nexpression A0;\n{decl}{where}@@\n"
                f" {call}\n")


@dataclass(frozen=True)
class DropPercpu(SetArg):
    """WQ_PERCPU taken out of flags that also have WQ_UNBOUND: what the kernel does."""

    name = "drop-percpu"

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        if finding.hints.flags_conditional:
            raise NoEdit("some values of the flags lack WQ_UNBOUND: decide per value")
        i = finding.flags_arg
        if i < 0 or i >= len(call.args):
            raise NoEdit(f"the flags are set inside {inner(call)}, not at this call")
        node = call.arg_nodes[i]
        if node is not None and (node.type in _LOW_PRECEDENCE or "||" in call.args[i] or "&&" in call.args[i]):
            raise NoEdit("the flags are a condition: drop WQ_PERCPU from the value that has it")
        written = operands(call.args[i])
        if written.count("WQ_PERCPU") != 1:
            raise NoEdit("WQ_PERCPU is not written at this call")
        cls.set(call, i, " | ".join(o for o in written if o != "WQ_PERCPU") or "0")


@dataclass(frozen=True)
class PercpuDefault(SetArg):
    name = "percpu-default"

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        cls.set(call, max_active_here(call, finding), "0")


@dataclass(frozen=True)
class Clamp(SetArg):
    name = "clamp"

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        i = max_active_here(call, finding)
        cls.set(call, i, f"min_t(int, {call.args[i]}, WQ_MAX_ACTIVE)")


@dataclass(frozen=True)
class ReplaceSystemQueue(EditKind):
    """A deprecated system queue passed to a queueing call becomes its replacement
    (api.DEPRECATED_SYSTEM_QUEUES), where the argument is the name itself."""

    name = "replace-system-queue"
    rule = "queue"
    shared = True

    callee: str
    arg: int
    old: str
    new: str

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        i = finding.hints.queue_arg if finding.hints.queue_arg is not None else -1
        if i < 0 or i >= len(call.args):
            raise NoEdit("the queue is not an argument of this call")
        old = parser.unparen(call.args[i])
        new = api.DEPRECATED_SYSTEM_QUEUES.get(old)
        if new is None:
            raise NoEdit("the queue is chosen by a condition: change the branch that names it")
        call.set_arg(i, new)
        call.ops.append(cls(call.name, i, old, new))

    def smpl(self, n: int, count: int) -> str:
        # Right wherever it matches: the same queue under the name that stays.
        decl = "".join(f"expression E{k};\n" for k in range(self.arg))
        before = "".join(f"E{k}, " for k in range(self.arg))
        return (f"// {self.callee}() on {self.old} -> {self.new}\n"
                f"@queue_{n}@\n{decl}@@\n"
                f" {self.callee}({before}\n-{self.old}\n+{self.new}\n ,...)\n")


# -- the call written anew ----------------------------------------------------------------

@dataclass(frozen=True)
class ExpandLegacy(EditKind):
    """create_*workqueue(name) `macro` -> `callee`(...) as the tree's macro defines it: with
    the name as the format where it is a literal without '%' (literal), else fmt and the name
    after the flags and the arguments in the middle."""

    name = "expand-legacy"
    rule = "legacy"
    shared = True

    macro: str
    callee: str
    literal: bool
    flags: str
    middle: tuple
    fmt: str

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        spec = facts.legacy.get(call.name)
        if spec is None or len(call.args) != 1:
            raise NoEdit(f"{call.name}() is not a create_*workqueue(name) macro of this tree")
        callee, fmt, flags, middle = spec
        flags = list(flags)
        if facts.has_percpu and callee == "alloc_workqueue" and "WQ_UNBOUND" not in flags \
                and "WQ_PERCPU" not in flags:
            flags.append("WQ_PERCPU")  # what missing-affinity-flag would ask of the result
        name = call.args[0]
        literal = re.fullmatch(r'"(?:[^"\\%]|\\.)*"', name.strip())
        tail = [] if literal and fmt == '"%s"' else [name]
        call.ops.append(cls(call.name, callee, not tail, " | ".join(flags) or "0", tuple(middle), fmt))
        call.name = callee
        call.args = [name.strip() if tail == [] else fmt, " | ".join(flags) or "0", *middle, *tail]
        call.arg_nodes = [None] * len(call.args)
        call.changed = set(range(len(call.args)))

    def rank(self) -> int:
        # Position-restricted (a literal name becomes the format) before the general rules,
        # which would otherwise convert those calls first.
        return -1 if self.literal else 0

    def smpl(self, n: int, count: int) -> str:
        rest = "".join(f", {m}" for m in self.middle)
        new = (f"{self.callee}(A0, {self.flags}{rest})" if self.literal
               else f"{self.callee}({self.fmt}, {self.flags}{rest}, A0)")
        # Safe wherever it matches: the macro's own definition, without __WQ_LEGACY. A name
        # used as the format only where it is a literal without '%' (those positions).
        cond = smpl.where(n, ["A0"]) if self.literal else ""
        return (f"// {self.macro}() -> {self.callee}()"
                f"{' with the literal name as the format' if self.literal else ''}\n"
                f"@legacy_{n}@\nexpression A0;\n{cond}@@\n"
                f"-{self.macro}{'@p' if self.literal else ''}(A0)\n+{new}\n")


@dataclass(frozen=True)
class Ordered(EditKind):
    """alloc_workqueue(name, WQ_UNBOUND | flags, 1, ...) -> alloc_ordered_workqueue(name, flags, ...)."""

    name = "ordered"
    rule = "ordered"

    flags_arg: int
    max_active_arg: int
    flags: str  # what is left of them

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        if call.name != "alloc_workqueue":
            raise NoEdit(f"the queue is made inside {inner(call)}: convert it there")
        if finding.hints.sysfs:
            raise NoEdit("WQ_SYSFS is set, which ordered queues refuse before v7.1")
        fi, mi = finding.flags_arg, finding.max_active_arg
        if fi != 1 or mi != 2 or call.args[mi].strip() != "1":
            raise NoEdit("max_active 1 is not written at this call")
        written = [o.strip() for o in layout.split_top(call.args[fi], "|")]
        if "WQ_UNBOUND" not in written:
            raise NoEdit("WQ_UNBOUND is not written at this call")
        call.name = "alloc_ordered_workqueue"
        call.set_arg(fi, " | ".join(o for o in written if o != "WQ_UNBOUND") or "0")
        call.remove_arg(mi)
        call.ops.append(cls(fi, mi, call.args[fi]))

    def smpl(self, n: int, count: int) -> str:
        where = smpl.where(n, ["A0", "F", '"1"', "es"])  # max_active 1, written at the call
        return (f"// unbound + max_active 1 -> alloc_ordered_workqueue()\n"
                f"@ordered_{n}@\nexpression A0, F;\nexpression list es;\n"
                f"{where}@@\n"
                f"-alloc_workqueue@p(A0, F, 1, es)\n+alloc_ordered_workqueue(A0, {self.flags}, es)\n")


@dataclass(frozen=True)
class GlobalLimit(EditKind):
    """max_active becomes 0 and the limit is set system-wide after the NULL check:
    CPU count * m / d through workqueue_set_global_max_active_cpus(), which follows CPU
    hotplug; any other expression of a CPU count (a cap) through workqueue_set_global_max_active().
    target: what the queue is stored in; check: the condition of the NULL check after the
    call (None: the setter gets an if (target) of its own)."""

    name = "global-limit"
    rule = "global"

    callee: str
    arg: int
    target: str
    setter: str
    args: tuple
    check: Optional[str]

    @classmethod
    def apply(cls, call: Call, finding: Finding, facts: TreeFacts) -> None:
        if call.name not in ALLOCATORS:
            raise NoEdit(f"the queue is made inside {inner(call)}: set the limit where the value is chosen")
        i = max_active_here(call, finding)
        node = call.arg_nodes[i]
        ratio = edits.cpu_ratio(node)
        if ratio is None and not edits.mentions_cpu_count(node):
            raise NoEdit("the CPU count is not written at this call: state the limit where it is computed")
        target, stmt = edits.assigned_to(call.node)
        if target is None:
            raise NoEdit("the new queue is not stored in a variable or field at this call")
        if ratio:
            setter = ("workqueue_set_global_max_active_cpus", [target, str(ratio[0]), str(ratio[1])])
        else:
            setter = ("workqueue_set_global_max_active", [target, call.args[i]])
        call.set_arg(i, "0")
        indent = layout.line_indent(call.src.line_text(call.src.line_at(call.base + stmt.start_byte)))
        check = edits.null_check_after(stmt, target)
        call.ops.append(cls(call.name, i, target, setter[0], tuple(setter[1]),
                            parser.text(check.child_by_field_name("condition")) if check is not None else None))
        statement = f"{setter[0]}({', '.join(layout.normalize(a) for a in setter[1])});"
        if check is not None:
            at = call.base + check.end_byte
            call.inserts.append(Edit(at, at, "\n" + _added_line(indent, statement)))
        else:
            at = call.base + stmt.end_byte
            added = f"\n{indent}if ({target})\n" + _added_line(indent + "\t", statement)
            if stmt.parent is not None and stmt.parent.type in _BODY_OF:
                # The body of an if, else or loop without braces becomes a block, as Coccinelle
                # writes it: "else {" ... "}" at the indentation of the line before.
                before = call.base + stmt.prev_sibling.end_byte
                outer = layout.line_indent(call.src.line_text(call.src.line_at(before - 1)))
                call.inserts.append(Edit(before, before, " {"))
                added += f"\n{outer}}}"
            call.inserts.append(Edit(at, at, added))

    def smpl(self, n: int, count: int) -> str:
        decl, where, call = smpl.arg_change(n, self.callee, self.arg, "0")
        # The queue as T and the limit as E: a field written out in the pattern would be
        # expanded by isomorphisms, which a position constraint on several variables refuses.
        args = ("T", *self.args[1:]) if self.setter.endswith("_cpus") else ("T", "E")
        stmt = f"{self.setter}({', '.join(args)});"
        head = f" T = {call};\n"
        decl += "expression T;\n"
        if self.check is not None:
            tail = f"{head} if (C) S\n+{stmt}\n"
            decl += "expression C;\nstatement S;\n"
        else:
            tail = f"{head}+if (T)\n+\t{stmt}\n"
        return (f"// a CPU-count max_active -> {self.setter}()\n"
                f"@global_{n}@\nexpression A0;\n{decl}{where}@@\n{tail}")


def _added_line(indent: str, statement: str) -> str:
    """A statement the fix adds on a line of its own, laid out as Coccinelle adds it."""
    return layout.coccinelle(indent + statement, [(len(indent), len(indent) + len(statement), False)])


# -- helpers ------------------------------------------------------------------------------

def inner(call: Call) -> str:
    return f"{call.name}()" if call.name not in ALLOCATORS else "a variable or wrapper"


def max_active_here(call: Call, finding: Finding) -> int:
    i = finding.max_active_arg
    if i < 0 or i >= len(call.args):
        raise NoEdit(f"max_active is set inside {inner(call)}, not at this call")
    return i


def _registry() -> dict:
    """{name: kind} of every class above that rules.yaml can name, in the order of fix_kinds.NAMES."""
    found, todo = {}, list(EditKind.__subclasses__())
    while todo:
        kind = todo.pop()
        todo.extend(kind.__subclasses__())
        if kind.name:
            found[kind.name] = kind
    if sorted(found) != sorted(kinds.NAMES):
        raise ImportError(f"fix_kinds.NAMES and the edit kinds differ: {sorted(set(found) ^ set(kinds.NAMES))}")
    return {name: found[name] for name in kinds.NAMES}


EDITS: dict[str, type[EditKind]] = _registry()
