"""SARIF for the tools that read it: what a suppression comment hides is a result with a
suppression (and the comment's reason as its justification), and every rule's helpUri points
at its section of docs/rules.md."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import REPO, SARIF_SCHEMA
from helpers import run

SCHEMA = SARIF_SCHEMA
SOURCE = """\
#include <linux/workqueue.h>
#include <linux/cpumask.h>
static struct workqueue_struct *a, *b, *c;
int f(void)
{
\t/* wqlint: ignore[unbound-max-active-cpu-count] one item per CPU is what the firmware allows */
\ta = alloc_workqueue("sup_a", WQ_UNBOUND, num_online_cpus());
\tb = alloc_workqueue("sup_b", WQ_UNBOUND, num_online_cpus()); /* wqlint: ignore */
\tc = alloc_workqueue("sup_c", WQ_UNBOUND, num_online_cpus());
\treturn 0;
}
"""


@pytest.fixture
def scanned(tmp_path):
    (tmp_path / "sup.c").write_text(SOURCE)
    result = run("scan", tmp_path, "--format", "sarif", "--kernel-version", "6.12")
    assert result.exit_code == 1, result.stderr
    return json.loads(result.stdout)


def test_suppressed_findings_are_results_with_their_justification(scanned):
    results = scanned["runs"][0]["results"]
    got = [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r.get("suppressions"))
           for r in results]
    assert got == [
        ("unbound-max-active-cpu-count", 9, None),
        ("unbound-max-active-cpu-count", 7, [{"kind": "inSource", "status": "accepted",
                                              "justification": "one item per CPU is what the firmware allows"}]),
        ("unbound-max-active-cpu-count", 8, [{"kind": "inSource", "status": "accepted"}])]
    # the other formats still leave them out
    text = run("scan", Path(urlsplit(scanned["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"]).path),
               "--kernel-version", "6.12")
    assert [ln.split(":")[1] for ln in text.stdout.splitlines() if not ln.startswith(" ")] == ["9"]


@pytest.mark.parametrize("comment, hidden, why", [
    # a reason with no rule list hides every rule: its first word is not a rule id
    ("/* wqlint: ignore because the firmware allows one per CPU */", True, "because the firmware allows one per CPU"),
    ("/* wqlint: ignore unbound-max-active-cpu-count: one per CPU */", True, "one per CPU"),
    ("/* wqlint: ignore missing-affinity-flag one per CPU */", False, None),
])
def test_a_rule_list_without_brackets(tmp_path, comment, hidden, why):
    (tmp_path / "sup.c").write_text("#include <linux/workqueue.h>\n#include <linux/cpumask.h>\n"
                                    "static struct workqueue_struct *a;\nint f(void)\n{\n\t" + comment +
                                    '\n\ta = alloc_workqueue("sup_a", WQ_UNBOUND, num_online_cpus());\n\treturn 0;\n}\n')
    result = run("scan", tmp_path, "--format", "sarif", "--kernel-version", "6.12")
    (got,) = [r.get("suppressions") for r in json.loads(result.stdout)["runs"][0]["results"]
              if r["ruleId"] == "unbound-max-active-cpu-count"]
    assert got == ([{"kind": "inSource", "status": "accepted", "justification": why}] if hidden else None)


def test_schema_valid(scanned):
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} absent: the shared schemas folder sits beside the checkout")
    jsonschema.validate(scanned, json.loads(SCHEMA.read_text()))


def test_every_rule_has_a_help_uri_to_its_section(scanned):
    rules = scanned["runs"][0]["tool"]["driver"]["rules"]
    docs = (REPO / "docs" / "rules.md").read_text()
    for rule in rules:
        uri = urlsplit(rule["helpUri"])
        assert (uri.scheme, Path(uri.path), uri.fragment) == ("file", REPO / "docs" / "rules.md", rule["id"])
        assert f"\n## {rule['id']}\n" in docs


def test_review_sarif_names_the_patch_and_is_schema_valid():
    from conftest import FIXTURES
    result = run("review", FIXTURES / "review" / "series.mbox", "--tree", FIXTURES / "review" / "tree", "-j", "1",
                 "--format", "sarif", "--all")
    doc = json.loads(result.stdout)
    got = [(r["ruleId"], r["baselineState"], r.get("properties", {}).get("introducedBy", {}).get("patch"))
           for r in doc["runs"][0]["results"]]
    # (--all: demo.c's old finding is in no file the series names)
    assert got == [("max-active-over-limit", "new", 3), ("unbound-max-active-cpu-count", "new", 3),
                   ("legacy-create-workqueue", "new", 2)]
    by = doc["runs"][0]["results"][2]["properties"]["introducedBy"]
    assert by == {"patch": 2, "subject": "[PATCH 2/3] demo: add an event queue",
                  "messageId": "<8f5ab2f551791b8eefef32dbb3a67e63fbdb249c.1795318918.git.jane@example.org>",
                  "path": "drivers/demo/extra.c", "line": 16}
    jsonschema = pytest.importorskip("jsonschema")
    if SCHEMA.is_file():
        jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
