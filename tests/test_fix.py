"""wqlint fix: the exact edits per rule and target (.fixed.c twins), idempotence, the diff
applying as git applies it, and every refusal: uncommitted work, files outside the tree,
a file changed since a saved scan.

Twins: tests/fixtures/fix/expected/<target>/<rule>/<path>.fixed.c hold each file that
`wqlint fix --target <target> --rule <rule> --apply --suggestions` changes, or
expected/both/<rule>/ when rules.yaml fixes the rule the same way for both targets; a file
without a twin must stay as it is. WQLINT_REGEN=1 rewrites them (then read the diff before
committing).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers import run
from wqlint import catalogue

TREE = FIXTURES / "fix" / "tree"
EXPECTED = FIXTURES / "fix" / "expected"
RULES = catalogue.load().ids()


def tree_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "tree"
    shutil.copytree(TREE, dest)
    return dest


def sources(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.c"))}


@pytest.mark.parametrize("target", ["mainline", "reference"])
@pytest.mark.parametrize("rule", RULES)
def test_fixed_twins(tmp_path, target, rule):
    root = tree_copy(tmp_path)
    before = sources(root)
    got = run("fix", root, "--target", target, "--rule", rule, "--apply", "--suggestions")
    assert got.exit_code == 0, got.stderr
    after = sources(root)
    cat = catalogue.load()
    same = cat[rule].fix_case("mainline", (6, 12, 0)) == cat[rule].fix_case("reference", (6, 12, 0))
    twins = EXPECTED / ("both" if same else target) / rule
    if os.environ.get("WQLINT_REGEN"):
        shutil.rmtree(twins, ignore_errors=True)
        for rel, text in after.items():
            if text != before[rel]:
                (twins / (rel[:-2] + ".fixed.c")).parent.mkdir(parents=True, exist_ok=True)
                (twins / (rel[:-2] + ".fixed.c")).write_text(text)
    for rel, text in after.items():
        twin = twins / (rel[:-2] + ".fixed.c")
        if twin.is_file():
            assert text == twin.read_text(), f"{rel} differs from {twin}"
        else:
            assert text == before[rel], f"{rel} changed but has no twin"
    # Idempotent: a second run finds nothing more to fix for this rule.
    again = run("fix", root, "--target", target, "--rule", rule, "--diff", "--suggestions")
    assert again.exit_code == 0 and again.stdout == ""


def test_every_rule_has_a_twin_somewhere():
    """Each edit kind rules.yaml names is exercised by at least one twin."""
    cat = catalogue.load()
    for rule in cat.rules:
        for target in ("mainline", "reference"):
            case = rule.fix_case(target, (6, 12, 0))
            if case.edit != "none":
                assert any((EXPECTED / target / rule.id).rglob("*.fixed.c")) or \
                    any((EXPECTED / "both" / rule.id).rglob("*.fixed.c")), (rule.id, target)


def test_mainline_cpu_count_is_explained_not_edited(tmp_path):
    root = tree_copy(tmp_path)
    got = run("fix", root, "--target", "mainline", "--rule", "unbound-max-active-cpu-count", "--diff")
    assert got.stdout == ""
    lines = got.stderr.splitlines()
    assert lines[0].startswith("not fixed [unbound-max-active-cpu-count] (6): On v6.12 max_active of an "
                               "unbound queue is already a system-wide limit (5797b1c18919)")
    assert lines[1:] == ["  drivers/fixme/cpus.c:10:38", "  drivers/fixme/cpus.c:13:12",
                         "  drivers/fixme/cpus.c:18:13", "  drivers/fixme/cpus.c:24:11",
                         "  drivers/fixme/cpus.c:34:12", "  drivers/fixme/cpus.c:48:13",
                         "wqlint: 0 finding(s) fixed in 0 file(s) (target mainline, v6.12); 6 not fixed"]


def test_a_call_in_a_macro_body_is_left_to_the_author(tmp_path):
    """A call only a #define holds is reported there; the fixer says why it leaves it, not
    that the file changed."""
    (tmp_path / "drv").mkdir()
    (tmp_path / "drv" / "m.c").write_text(
        "#define MK_WQ(n) alloc_workqueue(n, WQ_UNBOUND, \\\n\t\t\t\t num_online_cpus())\n")
    before = (tmp_path / "drv" / "m.c").read_bytes()
    got = run("fix", tmp_path, "--target", "reference", "--kernel-version", "6.12", "--apply")
    assert got.exit_code == 0
    assert got.stderr.splitlines()[-3:] == [
        "not fixed [unbound-max-active-cpu-count] (1): the call at drv/m.c:1 is in the body of a "
        "#define: wqlint does not rewrite macros, edit it by hand",
        "  drv/m.c:1:21",
        "wqlint: 0 finding(s) fixed in 0 file(s) (target reference, v6.12); 1 not fixed"]
    assert (tmp_path / "drv" / "m.c").read_bytes() == before


def test_suggestions_are_not_made_by_default(tmp_path):
    root = tree_copy(tmp_path)
    got = run("fix", root, "--target", "mainline", "--rule", "unbound-max-active-one", "--apply")
    assert got.exit_code == 0
    assert sources(root) == sources(TREE)
    assert "not fixed [unbound-max-active-one] (5): suggestion, made only with --suggestions: " in got.stderr


def test_version_decides_the_reference_fix(tmp_path):
    """On a v6.1 tree the system-wide limit lowers today's concurrency: only a suggestion."""
    root = tree_copy(tmp_path)
    got = run("fix", root, "--target", "reference", "--kernel-version", "6.1",
              "--rule", "unbound-max-active-cpu-count", "--diff")
    assert got.stdout == ""
    assert ("not fixed [unbound-max-active-cpu-count] (6): suggestion, made only with --suggestions: "
            "On v6.1 max_active of an unbound queue is not system-wide") in got.stderr
    made = run("fix", root, "--target", "reference", "--kernel-version", "6.1",
               "--rule", "unbound-max-active-cpu-count", "--diff", "--suggestions")
    added = [ln[1:].strip() for ln in made.stdout.splitlines() if ln.startswith("+\t")]
    assert [ln for ln in added if ln.startswith("workqueue_set_global")] == [
        "workqueue_set_global_max_active_cpus(read_wq, 1, 1);",
        "workqueue_set_global_max_active_cpus(write_wq, 2, 1);",
        "workqueue_set_global_max_active(cap_wq, min(num_online_cpus() + 2, 8));",
        "workqueue_set_global_max_active_cpus(bare_wq, 1, 2);",
        "workqueue_set_global_max_active_cpus(dev->wq, 1, 1);"]


def test_diff_applies_with_git_apply_like_apply(tmp_path):
    root = tree_copy(tmp_path)
    diff = run("fix", root, "--target", "reference", "--diff", "--suggestions").stdout
    assert diff.startswith("diff --git a/drivers/fixme/affinity.c b/drivers/fixme/affinity.c\n")
    subprocess.run(["git", "apply", "--check", "-"], input=diff, text=True, cwd=root, check=True)
    subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=root, check=True)
    other = tmp_path / "other"
    shutil.copytree(TREE, other)
    assert run("fix", other, "--target", "reference", "--apply", "--suggestions").exit_code == 0
    assert sources(root) == sources(other)


def _git_tree(tmp_path) -> Path:
    root = tree_copy(tmp_path)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e")
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "base"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    return root


def test_apply_refuses_uncommitted_work_unless_forced(tmp_path):
    root = _git_tree(tmp_path)
    legacy = root / "drivers/fixme/legacy.c"
    legacy.write_text(legacy.read_text() + "/* work in progress */\n")
    snapshot = sources(root)
    got = run("fix", root, "--target", "mainline", "--apply")
    assert got.exit_code == 1
    assert got.stderr.splitlines()[0] == ("Error: drivers/fixme/legacy.c: has uncommitted changes "
                                          "(1 file(s) in all); commit or stash them, or use --force")
    assert sources(root) == snapshot  # nothing written, not even the clean files
    forced = run("fix", root, "--target", "mainline", "--apply", "--force")
    assert forced.exit_code == 0
    assert "alloc_ordered_workqueue(\"%s\", WQ_MEM_RECLAIM, name)" in legacy.read_text()
    assert legacy.read_text().endswith("/* work in progress */\n")


def test_never_writes_outside_the_tree(tmp_path):
    """A saved scan naming a file outside the tree is refused; so is a change reaching
    outside through a symbolic link."""
    root = tree_copy(tmp_path)
    outside = tmp_path / "outside.c"
    outside.write_text('#include <linux/workqueue.h>\nvoid f(void)\n{\n\tw = alloc_workqueue("x", 0, 0);\n}\n')
    saved = tmp_path / "scan.json"
    run("scan", root, "--format", "json", "-o", saved)
    doc = json.loads(saved.read_text())
    doc["findings"][0]["path"] = "../outside.c"
    saved.write_text(json.dumps(doc))
    got = run("fix", root, "--target", "mainline", "--findings", saved, "--apply")
    assert got.exit_code == 3
    assert got.stderr.splitlines() == [f"Error: {saved}: finding in ../outside.c, outside the tree {root}"]
    assert "WQ_PERCPU" not in outside.read_text()

    from wqlint.fix import apply as apply_mod
    from wqlint.fix.model import FileChange
    (root / "drivers/fixme/link.c").symlink_to(outside)
    text = outside.read_text()
    with pytest.raises(apply_mod.ApplyError) as err:
        apply_mod.apply(root, [FileChange("drivers/fixme/link.c", text, text.replace("0, 0", "WQ_PERCPU, 0"))])
    assert str(err.value) == f"drivers/fixme/link.c: outside the tree {root}, not written"
    assert outside.read_text() == text


def test_saved_scan_of_a_file_that_changed_since(tmp_path):
    root = tree_copy(tmp_path)
    saved = tmp_path / "scan.json"
    scan = run("scan", root, "--format", "json", "-o", saved)
    assert scan.exit_code == 1
    fixed_from_saved = run("fix", root, "--target", "mainline", "--findings", saved, "--diff")
    assert fixed_from_saved.stdout == run("fix", root, "--target", "mainline", "--diff").stdout
    legacy = root / "drivers/fixme/legacy.c"
    legacy.write_text(legacy.read_text().replace('create_workqueue("fixme_legacy")', 'create_workqueue("renamed")'))
    got = run("fix", root, "--target", "mainline", "--findings", saved, "--diff")
    assert got.exit_code == 3
    assert got.stdout == ""
    assert got.stderr.splitlines() == [f"Error: drivers/fixme/legacy.c:8: changed since the scan ({saved}); scan again"]


def test_saved_scan_that_is_not_one(tmp_path):
    root = tree_copy(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"findings": [{"rule": "x"}]}))
    got = run("fix", root, "--target", "mainline", "--findings", bad, "--diff")
    assert got.exit_code == 3
    assert got.stderr.startswith(f"Error: {bad}: not a `wqlint scan --format json` document")


def test_fix_needs_a_mode_and_known_rules(tmp_path):
    assert run("fix", TREE, "--target", "mainline").exit_code == 2
    got = run("fix", TREE, "--target", "mainline", "--rule", "nope", "--diff")
    assert got.exit_code == 2 and "unknown rule 'nope'" in got.stderr


def test_fix_cocci_makes_the_same_change_as_fix(tmp_path):
    """spatch with the generated fix.cocci gives byte-identical files to `wqlint fix --apply`."""
    by_wqlint, by_spatch = tree_copy(tmp_path), tmp_path / "spatch"
    shutil.copytree(TREE, by_spatch)
    out = tmp_path / "out"
    from wqlint.fix import cocci_gen
    from wqlint.fix.plan import plan
    from wqlint.lint import scan
    cat = catalogue.load()
    result = plan(scan([str(by_spatch)], cat), cat, "reference", suggestions=True)
    out.mkdir()
    (out / "fix.cocci").write_text(cocci_gen.generate(result.fixes(), "reference", result.version, "t"))
    subprocess.run(["spatch", "--sp-file", str(out / "fix.cocci"), "--dir", ".", "--in-place", "--very-quiet"],
                   cwd=by_spatch, check=True, capture_output=True)
    assert run("fix", by_wqlint, "--target", "reference", "--apply", "--suggestions").exit_code == 0
    assert sources(by_spatch) == sources(by_wqlint)
    assert sources(by_spatch) != sources(TREE)


def test_diff_of_a_file_without_a_final_newline_applies(tmp_path):
    """The changed last line lacks a newline before and after: both sides are marked."""
    root = tree_copy(tmp_path)
    legacy = root / "drivers/fixme/legacy.c"
    legacy.write_text(legacy.read_text() + 'int z(void) { return !create_workqueue("z"); }')
    other = tmp_path / "other"
    shutil.copytree(root, other)
    diff = run("fix", root, "--target", "mainline", "--rule", "legacy-create-workqueue", "--diff").stdout
    legacy_part = diff.split("diff --git a/drivers/fixme/legacy.c ")[1].split("diff --git ")[0]
    assert legacy_part.endswith('-int z(void) { return !create_workqueue("z"); }\n'
                         "\\ No newline at end of file\n"
                         '+int z(void) { return !alloc_workqueue("z", WQ_MEM_RECLAIM | WQ_PERCPU, 1); }\n'
                         "\\ No newline at end of file\n")
    subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=other, check=True)
    assert run("fix", root, "--target", "mainline", "--rule", "legacy-create-workqueue", "--apply").exit_code == 0
    assert sources(other) == sources(root)


def test_reclaim_fix_gives_the_flushed_queue_a_rescuer_only_where_that_is_safe(tmp_path):
    """reclaim-flush-dependency: WQ_MEM_RECLAIM at the flushed queue's one allocation (in
    another function than the flush; the reclaim queue in another file); a queue kept per
    object only with --suggestions; and why each other flush is left as it is: a system
    queue, a WQ_BH queue, flags inside a macro, a work item on two queues, another
    subsystem's queue, an allocation in a loop, a queue whose own work would then warn, a
    wrapper that masks the flag out."""
    root = tree_copy(tmp_path)
    got = run("fix", root, "--target", "mainline", "--rule", "reclaim-flush-dependency", "--diff")
    assert got.exit_code == 0
    added = [ln[1:].strip() for ln in got.stdout.splitlines() if ln.startswith("+\t")]
    assert added == ['rs_events_wq = alloc_workqueue("rs-events",', "WQ_UNBOUND | WQ_MEM_RECLAIM, 0);",
                     'rs_log_wq = alloc_ordered_workqueue("rs-log", WQ_MEM_RECLAIM);',
                     'rs_stats_wq = alloc_workqueue("rs-stats", WQ_MEM_RECLAIM, 0);']
    lines = got.stderr.splitlines()
    assert lines == [
        "not fixed [reclaim-flush-dependency] (1): system_percpu_wq is a system queue, which cannot be given "
        "WQ_MEM_RECLAIM: move the waiting work off rs-reclaim (queue it on a queue without WQ_MEM_RECLAIM if it "
        "is not needed to free memory), or wait for system_percpu_wq where no work of rs-reclaim runs.",
        "  drivers/rescue/rescue.c:72:2",
        "not fixed [reclaim-flush-dependency] (1): suggestion, made only with --suggestions: On v6.12 "
        "check_flush_dependency() returns at once for a flushed queue with WQ_MEM_RECLAIM, so the work no longer "
        "waits on a queue without a rescuer. The queue is kept in a struct member and allocated once per object: "
        "every instance gets its own rescuer thread (a kthread, mostly asleep), which is cheap for one queue per "
        "device and many threads for one per connection or I/O queue; that, and whether the flushed work may be "
        "needed to reclaim memory at all, is the maintainer's choice (moving the waiting work off the reclaim "
        "queue, when it is not needed to free memory, is the other).",
        "  drivers/rescue/rescue.c:79:2",
        "not fixed [reclaim-flush-dependency] (1): rs-bh is a WQ_BH queue, which the kernel does not allocate "
        "with WQ_MEM_RECLAIM (__WQ_BH_ALLOWS): move the waiting work off rs-reclaim (queue it on a queue without "
        "WQ_MEM_RECLAIM if it is not needed to free memory), or wait for rs-bh where no work of rs-reclaim runs.",
        "  drivers/rescue/rescue_more.c:27:2",
        "not fixed [reclaim-flush-dependency] (1): The flags of rs-macro are set inside RS_ALLOC(), not at its "
        "call: add WQ_MEM_RECLAIM there if every queue it makes may be waited for in reclaim (each allocation "
        "then creates a rescuer kernel thread), or move the waiting work off rs-reclaim: queue it on a queue "
        "without WQ_MEM_RECLAIM if it is not needed to free memory.",
        "  drivers/rescue/rescue_more.c:28:2",
        "not fixed [reclaim-flush-dependency] (1): The work waits for queues allocated at several places "
        "(rs-a/rs-b): give each WQ_MEM_RECLAIM (each allocation then creates a rescuer kernel thread) if its work"
        " may be waited for in reclaim, or move the waiting work off rs-reclaim: queue it on a queue without "
        "WQ_MEM_RECLAIM if it is not needed to free memory.",
        "  drivers/rescue/rescue_more.c:29:2",
        "not fixed [reclaim-flush-dependency] (1): rs-shared is allocated in another subsystem, whose maintainers"
        " decide whether it needs a rescuer: move the waiting work off rs-reclaim (queue it on a queue without "
        "WQ_MEM_RECLAIM if it is not needed to free memory), or wait for rs-shared where no work of rs-reclaim "
        "runs.",
        "  drivers/rescue/rescue_more.c:30:2",
        "not fixed [reclaim-flush-dependency] (1): the flushed queue is allocated in a loop, one queue per "
        "iteration: WQ_MEM_RECLAIM would give each a rescuer thread; decide by hand",
        "  drivers/rescue/rescue.c:66:2",
        "not fixed [reclaim-flush-dependency] (1): with WQ_MEM_RECLAIM the queue's own work would be reclaim work"
        " that waits for a queue without it (drivers/rescue/rescue.c:34, rs_chain_fn()): fix that wait first",
        "  drivers/rescue/rescue.c:61:2",
        "not fixed [reclaim-flush-dependency] (1): with WQ_MEM_RECLAIM written at this call the flushed queue "
        "still lacks it (see the chain: the flags are changed on the way): add it where they are",
        "  drivers/rescue/rescue_more.c:31:2",
        "wqlint: 4 finding(s) fixed in 1 file(s) (target mainline, v6.12); 9 not fixed"]
    # With every rule, rs-chain still gets the WQ_PERCPU of missing-affinity-flag: only the
    # WQ_MEM_RECLAIM its own work rules out is left.
    every = run("fix", root, "--target", "mainline", "--diff")
    assert '+\trs_chain_wq = alloc_workqueue("rs-chain", WQ_PERCPU, 0);' in every.stdout.splitlines()
    assert ("not fixed [reclaim-flush-dependency] (1): with WQ_MEM_RECLAIM the queue's own work would be reclaim "
            "work that waits for a queue without it (drivers/rescue/rescue.c:34, rs_chain_fn()): fix that wait "
            "first\n  drivers/rescue/rescue.c:61:2\n") in every.stderr
    # Applied, the four findings of the three queues given a rescuer are gone and nothing new appears.
    assert run("fix", root, "--target", "mainline", "--rule", "reclaim-flush-dependency", "--apply").exit_code == 0
    left = json.loads(run("scan", root / "drivers/rescue/rescue.c", root / "drivers/rescue/rescue_core.c",
                          "--format", "json", "--no-cache").stdout)
    assert sorted(f["line"] for f in left["findings"] if f["rule"] == "reclaim-flush-dependency") == [
        61, 66, 72, 79]


def test_a_saved_reclaim_finding_is_fixed_as_judged_now(tmp_path):
    """A saved scan's findings are requests: whatever their hints say of where and whether to
    edit (no per-object, no no-fix, another call to edit), they get the fixes a fresh scan
    gets, and the queue kept per object is still only a suggestion. Without the files they are
    judged from (a scan saved by an older wqlint), they are not found again: scan again."""
    root = tree_copy(tmp_path)
    saved = json.loads(run("scan", root, "--format", "json", "--no-cache").stdout)
    for f in saved["findings"]:
        f["hints"] = [h for h in f["hints"] if h.startswith("judged-with=")] + ["edit-at=1:1:drivers/rescue/rescue.c"]
    (tmp_path / "scan.json").write_text(json.dumps(saved))
    args = ["--target", "mainline", "--rule", "reclaim-flush-dependency", "--diff"]
    fresh = run("fix", root, *args)
    got = run("fix", root, "--findings", tmp_path / "scan.json", *args)
    assert got.exit_code == 0 and got.stdout == fresh.stdout != ""
    assert "rs_port_init" not in got.stdout
    assert sorted(got.stderr.splitlines()) == sorted(fresh.stderr.splitlines())
    for f in saved["findings"]:
        f["hints"] = []
    (tmp_path / "scan.json").write_text(json.dumps(saved))
    got = run("fix", root, "--findings", tmp_path / "scan.json", *args)
    assert got.stdout == "" and got.stderr.splitlines()[0] == (
        "not fixed [reclaim-flush-dependency] (13): not found again in the file as it is now (judged afresh "
        "from its bytes): scan again")


def test_hints_are_read_back_as_a_scan_writes_them():
    """A saved scan's hints are strings (a flag by its name, a value as name=value): read back,
    they are written again the same; one not known, or a value that cannot be read, is left out."""
    from wqlint.finding import At, Hints, NoFix
    saved = [["flags-conditional"], ["sysfs"], ["compat-branch", "queue-arg=0"],
             ["judged-with=a.c", "judged-with=b.c", "no-fix=system:system_wq", "target-own"],
             ["edit-arg=1", "edit-at=12:5:drivers/x.c", "judged-with=a.c", "per-object", "target-own"],
             ["judged-with=a.c", "no-fix=inside:"], ["no-fix=foreign"], []]
    for hints in saved:
        assert Hints.parse(hints).strings() == hints
    got = Hints.parse(["edit-at=12:5:drivers/x.c", "no-fix=sites:3", "per-object", "edit-arg=x", "sysfs=1", "new-one"])
    assert got == Hints(edit_at=At(12, 5, "drivers/x.c"), no_fix=NoFix("sites", "3"), per_object=True)
    assert got.has("per-object") and not got.has("sysfs") and not got.has("no-fix")
    assert Hints.parse(["edit-at=12:x:drivers/x.c"]).edit_at is None


def test_the_edits_rules_yaml_may_name_are_the_fixer_s_kinds(tmp_path):
    """Each edit kind is a class of fix.edit_kinds; rules.yaml is checked against their names
    (fix_kinds), which the catalogue reads without loading the fixer, in either import order."""
    import sys

    from conftest import REPO
    from wqlint.fix import edit_kinds
    assert catalogue.FIX_EDITS == (*edit_kinds.EDITS, "none")
    assert all(kind.name == name for name, kind in edit_kinds.EDITS.items())
    bad = tmp_path / "rules.yaml"
    bad.write_text((REPO / "rules.yaml").read_text().replace("edit: clamp\n", "edit: clamp-hard\n", 1))
    with pytest.raises(catalogue.CatalogueError, match="edit 'clamp-hard' is not one of expand-legacy, ordered, "):
        catalogue.load(bad)
    for first, then in (("wqlint.catalogue", "wqlint.fix.edit_kinds"), ("wqlint.fix.edit_kinds", "wqlint.catalogue")):
        got = subprocess.run([sys.executable, "-c", f"import sys, {first}; loaded = set(sys.modules); import {then}; "
                              "print(sorted(m for m in loaded if m.startswith('wqlint.fix.')))"],
                             capture_output=True, text=True, check=True)
        if first == "wqlint.catalogue":
            assert got.stdout.strip() == "[]"
