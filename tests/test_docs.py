"""The README's rule table is generated from rules.yaml, not written by hand."""
from conftest import REPO
from helpers import run


def test_readme_rule_table_matches_catalogue():
    text = (REPO / "README.md").read_text()
    table = text.split("<!-- rules-table-start -->\n")[1].split("<!-- rules-table-end -->")[0]
    assert table == run("rules", "--markdown").stdout


def test_readme_starts_with_the_two_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[3].startswith("scripts/demo") and lines[4].startswith("scripts/test")
