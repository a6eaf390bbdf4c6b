"""What the checks share: building a Finding from a site and a catalogue rule."""
from __future__ import annotations

from wqlint.checks._flags import PATH_JUDGED, always_set
from wqlint.checks.context import CheckContext
from wqlint.finding import NO_HINTS, Finding, Hints, Step
from wqlint.scan.site import Flow, QueueUse, SelfWait, Site
from wqlint.scan.values import steps_in


def finding(site: Site, ctx: CheckContext, rule_id: str, detail: str, chain: list,
            case: str = "default", hints: Hints = NO_HINTS, role: str = "max_active") -> Finding:
    """case: which of the rule's migration texts in rules.yaml applies; role: the argument
    the rule judges, flags or max_active (part of the identity)."""
    rule = ctx.catalogue[rule_id]
    migration = rule.migration_text(case, entry=site.entry)
    text = rule.message_on(ctx.version)
    message = text if not detail else f"{text} ({detail})"
    return Finding(
        rule_id=rule_id, severity=rule.severity_on(ctx.version), path=site.path, line=site.line, col=site.col,
        end_col=site.end_col, message=message, chain=tuple(_dedupe(chain)), migration=migration,
        flags_arg=site.flags_arg, max_active_arg=site.max_active_arg, hints=hints,
        function=site.function, queue=site.queue, role=role,
        flags_chain=tuple(_dedupe(list(site.prefix) + steps_in(site.flags))),
        max_active_chain=tuple(_dedupe(list(site.prefix) + steps_in(site.max_active))),
        end_line=site.end_line,
    )


def applies(site: "Site | QueueUse | Flow | SelfWait", ctx: CheckContext, rule_id: str) -> bool:
    rule = ctx.catalogue[rule_id]
    if rule_id in site.suppressed:
        return False
    if rule.requires_symbol and not ctx.defines(rule.requires_symbol):
        return False
    return rule.kernel_versions.contains(ctx.version)


def _dedupe(steps: list) -> list:
    out: list[Step] = []
    for step in steps:
        if isinstance(step, Step) and not any(s.path == step.path and s.line == step.line
                                              and s.note == step.note for s in out):
            out.append(step)
    return out


def via_text(site: Site) -> str:
    return f" through {' -> '.join(n + '()' for n in site.via)}" if site.via else ""


def use_finding(use, ctx: CheckContext, rule_id: str, detail: str, case: str = "default",
                hints: Hints = NO_HINTS, **fields) -> Finding:
    """A Finding at a QueueUse: the call that names the queue; fields fill in the rule's
    migration text."""
    rule = ctx.catalogue[rule_id]
    migration = rule.migration_text(case, **fields)
    text = rule.message_on(ctx.version)
    return Finding(
        rule_id=rule_id, severity=rule.severity_on(ctx.version), path=use.path, line=use.line,
        col=use.col, end_col=use.end_col, message=f"{text} ({detail})" if detail else text,
        chain=(use.step,) + tuple(use.conditions), migration=migration, hints=hints, function=use.function,
        queue=f"{use.call}({use.queue})", role="queue")


def flow_finding(flow, ctx: CheckContext, rule_id: str, detail: str, chain: list,
                 hints: Hints = NO_HINTS, case: str = "default", **fields) -> Finding:
    """A Finding at a Flow: reported at the flush, the chain from the queue's allocation to
    it; case chooses the rule's migration text, fields fill it in."""
    rule = ctx.catalogue[rule_id]
    return Finding(
        rule_id=rule_id, severity=rule.severity_on(ctx.version), path=flow.path, line=flow.line,
        col=flow.col, end_col=flow.end_col, message=f"{rule.message_on(ctx.version)} ({detail})",
        chain=tuple(_dedupe(chain)), migration=rule.migration_text(case, **fields), hints=hints,
        function=flow.function, queue=f"{flow.call}({flow.target.key.show() if flow.target.key else ''})",
        role="flow")


def judged_flags(flags, bits) -> frozenset:
    """The flags the rules of an allocation judge that every value of flags has: what a review
    says a patch added to or dropped from a queue."""
    return always_set(flags, bits)


def path_flags(flags, bits) -> frozenset:
    """The flags the rules about a work's path judge of an allocation on it (WQ_MEM_RECLAIM,
    __WQ_LEGACY) that every value of flags has: what a review says a patch added to or
    dropped from a queue of the path."""
    return always_set(flags, bits, PATH_JUDGED)
