"""SARIF 2.1.0, as `wqlint scan` writes it (formatters/sarif.py), for the reported findings.

Each result also says what the review knows of it: baselineState 'new' (introduced, or
new elsewhere) or 'unchanged' (there before the series, with --all); partialFingerprints
'wqlintStable/v1' as the review numbers it (what `scan` gives the tree after the series);
and for an introduced finding, properties.introducedBy: the patch (number, subject,
Message-ID) and the changed line it is blamed on, which is also a related location when it
is not the call's line.
"""
from __future__ import annotations

import json

from wqlint.formatters import jsondoc
from wqlint.formatters import sarif as scan_sarif
from wqlint.formatters.review.mail import sentence


def format(review, catalogue) -> str:
    doc = json.loads(scan_sarif.format(review.as_report(), catalogue))
    run = doc["runs"][0]
    run["automationDetails"]["id"] = "wqlint/review/"
    if not review.tree:
        del run["originalUriBaseIds"]
        for result in run["results"]:
            _drop_base(result)
    blamed = {id(c.finding): c for c in review.comments}
    preexisting = {id(f) for f in review.preexisting}
    for result, f in zip(run["results"], review.findings()):  # (the same order)
        result["partialFingerprints"]["wqlintStable/v1"] = review.fingerprint(f)
        result["baselineState"] = "unchanged" if id(f) in preexisting else "new"
        c = blamed.get(id(f))
        if c is None:
            continue
        patch = review.patches[c.origin.patch - 1]
        result.setdefault("properties", {})["introducedBy"] = {
            "patch": patch.number, "subject": patch.subject, "messageId": patch.message_id,
            "path": c.path, "line": c.line, **({"what": sentence(c.what)} if c.what else {})}
        if not c.at_call:
            result["relatedLocations"] = [{"id": 1, "physicalLocation": {
                "artifactLocation": {"uri": scan_sarif.uri(c.path),
                                     **({"uriBaseId": "SRCROOT"} if review.tree else {})},
                "region": {"startLine": c.line}},
                "message": {"text": sentence(c.what) if c.what else "introduced here"}}]
    return jsondoc.dumps(doc, indent=2) + "\n"


def _drop_base(node):
    if isinstance(node, dict):
        node.pop("uriBaseId", None)
        for v in node.values():
            _drop_base(v)
    elif isinstance(node, list):
        for v in node:
            _drop_base(v)
