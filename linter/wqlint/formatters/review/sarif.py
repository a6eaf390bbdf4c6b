"""SARIF 2.1.0, as `wqlint scan` writes it (formatters/sarif.py), for the reported findings;
an introduced finding blamed on another line has that line as a related location."""
from __future__ import annotations

import json

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
    blamed = {c.finding.fingerprint(): c for c in review.comments if not c.at_call}
    for result in run["results"]:
        c = blamed.get(result["partialFingerprints"]["wqlintFingerprint/v2"])
        if c is not None:
            result["relatedLocations"] = [{"id": 1, "physicalLocation": {
                "artifactLocation": {"uri": scan_sarif.uri(c.path),
                                     **({"uriBaseId": "SRCROOT"} if review.tree else {})},
                "region": {"startLine": c.line}},
                "message": {"text": sentence(c.what) if c.what else "introduced here"}}]
    return json.dumps(doc, indent=2) + "\n"


def _drop_base(node):
    if isinstance(node, dict):
        node.pop("uriBaseId", None)
        for v in node.values():
            _drop_base(v)
    elif isinstance(node, list):
        for v in node:
            _drop_base(v)
