"""SARIF 2.1.0: rule metadata from rules.yaml, results with partialFingerprints.

wqlintFingerprint/v2 is Finding.fingerprint() (rule, file, function, queue, argument);
wqlintStable/v1 is stable_fingerprints(), which also survives a file renamed or a function
moved within its directory (what a review bot keeps to comment once per finding)."""
from __future__ import annotations

from wqlint import __version__, kversion
from wqlint.finding import stable_fingerprints
from wqlint.formatters import jsondoc

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "note": "note"}


def help_uri(rule_id: str) -> str:
    """Where a rule's documentation is: its section of docs/rules.md, in the checkout wqlint
    runs from or the copy a wheel carries (project_files)."""
    from wqlint.project_files import locate

    return (locate("docs", "WQLINT_DOCS") / "rules.md").resolve().as_uri() + "#" + rule_id


def _rule(rule) -> dict:
    return {
        "id": rule.id,
        "helpUri": help_uri(rule.id),
        "name": "".join(w.capitalize() for w in rule.id.split("-")),
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": " ".join(rule.docs["what-it-does"].split())},
        "help": {"text": rule.doc_text(), "markdown": rule.doc_text()},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"kernel-versions": rule.kernel_versions.text, "fix-safety": rule.fix_safety},
    }


def uri(path: str) -> str:
    """A path as a URI reference: its bytes (a name that is not UTF-8 came in through
    surrogateescape) percent-encoded, '/' kept (RFC 3986: spaces, quotes, '<wqlint>')."""
    import os
    from urllib.parse import quote

    return quote(os.fsencode(path), safe="/")


def _location(path, line, col=None, end_col=None, message=None) -> dict:
    region = {"startLine": line}
    if col:
        region["startColumn"] = col
        if end_col and end_col >= col:
            region["endColumn"] = end_col + 1
    loc = {"physicalLocation": {"artifactLocation": {"uri": uri(path), "uriBaseId": "SRCROOT"},
                                "region": region}}
    if message:
        loc["message"] = {"text": message}
    return loc


def _thread(chain) -> dict:
    return {"locations": [{"location": _location(s.path, s.line, message=s.note)} for s in chain]}


def format(report, catalogue) -> str:
    ids = catalogue.ids()
    stable = stable_fingerprints(report.findings)
    results = []
    for f in report.findings:
        result = {
            "ruleId": f.rule_id,
            "ruleIndex": ids.index(f.rule_id),
            "level": LEVELS[f.severity],
            "message": {"text": f.message + (f"\nFix: {f.migration}" if f.migration else "")},
            "locations": [_location(f.path, f.line, f.col, f.end_col)],
            "partialFingerprints": {"wqlintFingerprint/v2": f.fingerprint(), "wqlintStable/v1": stable[id(f)]},
        }
        if f.works:  # one code flow per work the finding stands for, each its chain
            result["codeFlows"] = [{"message": {"text": w.name}, "threadFlows": [_thread(w.chain)]}
                                   for w in f.works]
        elif f.chain:
            result["codeFlows"] = [{"threadFlows": [_thread(f.chain)]}]
        results.append(result)
    # What a comment suppresses is listed too, with the comment's reason: a viewer shows it as
    # suppressed, and a later run without the comment is the same result (same fingerprints).
    hidden = stable_fingerprints([f for f, _ in report.suppressed])
    for f, why in report.suppressed:
        results.append({
            "ruleId": f.rule_id, "ruleIndex": ids.index(f.rule_id), "level": LEVELS[f.severity],
            "message": {"text": f.message + (f"\nFix: {f.migration}" if f.migration else "")},
            "locations": [_location(f.path, f.line, f.col, f.end_col)],
            "partialFingerprints": {"wqlintFingerprint/v2": f.fingerprint(), "wqlintStable/v1": hidden[id(f)]},
            "suppressions": [{"kind": "inSource", "status": "accepted",
                              **({"justification": why} if why else {})}],
        })
    run = {
        "tool": {"driver": {"name": "wqlint", "version": __version__,
                            "informationUri": "https://docs.kernel.org/core-api/workqueue.html",
                            "rules": [_rule(r) for r in catalogue.rules]}},
        "originalUriBaseIds": {"SRCROOT": {"uri": "file://" + uri(report.root.rstrip("/")) + "/"}},
        "automationDetails": {"id": "wqlint/scan/"},
        "results": results,
        "properties": {"kernelVersion": kversion.show(report.kernel_version),
                       "kernelVersionSource": report.kernel_version_source},
    }
    if report.errors:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": [
            {"level": "error", "message": {"text": e.problem},
             "locations": [_location(e.path, 1)]} for e in report.errors]}]
    else:
        run["invocations"] = [{"executionSuccessful": True}]
    return jsondoc.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
