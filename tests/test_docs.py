"""The documentation: README.md is the set-up and a tour, each command has its page in docs/,
and the generated parts are what the code generates."""
import re

from conftest import REPO
from helpers import run

DOCS = REPO / "docs"


def test_rules_page_table_matches_catalogue():
    text = (DOCS / "rules.md").read_text()
    table = text.split("<!-- rules-table-start -->\n")[1].split("<!-- rules-table-end -->")[0]
    assert table == run("rules", "--markdown").stdout


def test_rules_page_sections_match_catalogue():
    text = (DOCS / "rules.md").read_text()
    sections = text.split("<!-- rules-docs-start -->\n")[1].split("<!-- rules-docs-end -->")[0]
    assert sections == run("rules", "--markdown-docs").stdout
    ids = [ln.split()[1] for ln in sections.splitlines() if ln.startswith("## ")]
    assert ids == [ln.split("`")[1] for ln in text.splitlines() if ln.startswith("| `")]


def test_readme_starts_with_the_two_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[3].startswith("scripts/demo") and lines[4].startswith("scripts/test")


def test_readme_is_short_and_links_every_page():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 100
    linked = set(re.findall(r"\]\(docs/([^)#]+)\)", text))
    assert linked == {p.name for p in DOCS.glob("*.md")}


def test_every_command_has_its_page():
    for command in ("scan", "review", "fix", "check"):
        assert f"# wqlint {command}" in (DOCS / f"{command}.md").read_text()


def test_relative_links_point_at_files_that_exist():
    for page in [REPO / "README.md", *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)]+)\)", page.read_text()):
            if "://" in target:
                continue
            path = target.split("#")[0]
            assert (page.parent / path).exists(), (page.name, target)
