"""Every annotated fixture: exactly the marked findings, at exactly the marked lines.

Each rule has its fixture beside its id, tests/rules/<rule-id>.c, judged on v7.3 unless a
`// kernel-version: X` line near its top says otherwise; where `wqlint fix --target mainline
--rule <rule-id>` changes it, tests/rules/<rule-id>.fixed.c is the file as the fix leaves it.
A new rule adds its fixture there, and no line here."""
from __future__ import annotations

import re
import shutil

import pytest

from annotations import marks
from conftest import FIXTURES, REPO, RULES, rule_fixture
from helpers import run, scan_json
from wqlint import catalogue

# Each tree with the version it is judged on: a tree's own header decides what exists.
TREES = [(REPO / "examples" / "demo-tree", "7.3"), (FIXTURES / "rules", "7.3"),
         (FIXTURES / "mainline", "7.3"), (FIXTURES / "mainline-6.12", "6.12")]


@pytest.mark.parametrize("tree,version", TREES, ids=lambda p: getattr(p, "name", p))
def test_findings_match_marks(tree, version):
    doc, result = scan_json(tree, "--kernel-version", version)
    expected, forbidden = marks(tree)
    got = {(f["path"], f["line"], f["rule"]) for f in doc["findings"]}
    assert expected, "fixture has no marks"
    assert got == expected, f"missing: {sorted(expected - got)}; unexpected: {sorted(got - expected)}"
    assert not (got & forbidden)
    assert result.exit_code == 1


def _rule_fixtures() -> list:
    return sorted(p for p in RULES.glob("*.c") if not p.name.endswith(".fixed.c"))


def _version(fixture) -> str:
    found = re.search(r"(?m)^// kernel-version: (\S+)$", "\n".join(fixture.read_text().splitlines()[:5]))
    return found.group(1) if found else "7.3"


def test_every_rule_has_its_fixture():
    ids = set(catalogue.load(REPO / "rules.yaml").ids())
    have = {p.name[:-len(".c")] for p in _rule_fixtures()}
    assert not ids - have, f"rules without tests/rules/<rule-id>.c: {sorted(ids - have)}"
    assert not have - ids, f"fixtures of no rule: {sorted(have - ids)}"
    twins = {p.name[:-len(".fixed.c")] for p in RULES.glob("*.fixed.c")}
    assert twins <= have, f"fix twins without their fixture: {sorted(twins - have)}"


@pytest.mark.parametrize("fixture", _rule_fixtures(), ids=lambda p: p.name[:-len(".c")])
def test_rule_fixture(fixture, tmp_path):
    """The fixture's findings are its marks, its own rule among them; the fix of its rule
    leaves it as its .fixed.c twin says, or unchanged where it has none."""
    rule, version = fixture.name[:-len(".c")], _version(fixture)
    doc, result = scan_json(rule_fixture(fixture.name), "--kernel-version", version)
    expected, forbidden = marks(fixture)
    got = {(f["path"], f["line"], f["rule"]) for f in doc["findings"]}
    assert rule in {r for _, _, r in expected}, f"no `// ruleid: {rule}` mark"
    assert got == expected, f"missing: {sorted(expected - got)}; unexpected: {sorted(got - expected)}"
    assert not (got & forbidden)
    assert result.exit_code == 1
    copy = tmp_path / fixture.name
    shutil.copyfile(fixture, copy)
    fixed = run("fix", copy, "--target", "mainline", "--rule", rule, "--suggestions", "--apply",
                "--kernel-version", version, "--oldest-kernel", version, "--no-cache")
    assert fixed.exit_code == 0, fixed.stderr
    twin = fixture.with_name(f"{rule}.fixed.c")
    if twin.exists():
        assert copy.read_text() == twin.read_text()
    else:
        assert copy.read_text() == fixture.read_text(), f"the fix changes the fixture: add {twin.name}"


def test_wrapper_chain_goes_from_call_to_cpu_count():
    doc, _ = scan_json(REPO / "examples" / "demo-tree", "--kernel-version", "6.12")
    f = next(f for f in doc["findings"]
             if f["path"] == "fs/blkfs/disk-io.c" and f["line"] == 13)
    assert f["rule"] == "unbound-max-active-cpu-count"
    assert f["column"] == 3
    assert [(s["path"], s["line"]) for s in f["chain"]] == [
        ("fs/blkfs/disk-io.c", 13),      # the wrapper call
        ("fs/blkfs/async-thread.c", 23),  # alloc_workqueue() inside the wrapper
        ("fs/blkfs/async-thread.c", 20),  # ret->current_active = limit_active
        ("fs/blkfs/async-thread.c", 20),  # limit_active is the wrapper's parameter
        ("fs/blkfs/disk-io.c", 13),      # limit_active <- max_active
        ("fs/blkfs/disk-io.c", 8),       # max_active = fs_info->thread_pool_size
        ("fs/blkfs/disk-io.c", 8),       # fs_info's field thread_pool_size
        ("fs/blkfs/super.c", 10),        # the field is assigned in another file
        ("fs/blkfs/super.c", 11),        # num_online_cpus()
    ]
    assert f["chain"][-1]["note"] == "CPU count num_online_cpus()"
    assert "through blkfs_alloc_workqueue()" in f["message"]
    assert "with 96 CPUs up to 8 in-flight items" in f["message"]  # min_t(ncpus + 2, 8)


def test_ifdef_twins_are_both_reported():
    doc, _ = scan_json(REPO / "examples" / "demo-tree")
    lines = {f["line"] for f in doc["findings"] if f["path"] == "drivers/accel/qm.c"
             and f["rule"] == "unbound-max-active-cpu-count"}
    assert {26, 29} <= lines


def test_module_parameter_default_is_not_a_cpu_count():
    doc, _ = scan_json(REPO / "examples" / "demo-tree")
    assert not [f for f in doc["findings"] if f["path"] == "drivers/accel/qm.c" and f["line"] == 32]


def test_module_parameter_with_a_cpu_count_default_is_reported_as_tunable():
    doc, _ = scan_json(REPO / "examples" / "demo-tree")
    f = next(f for f in doc["findings"] if f["path"] == "drivers/accel/qm.c" and f["line"] == 50
             and f["rule"] == "unbound-max-active-cpu-count")
    assert "a default, tunable through module parameter 'qm_poll_threads'" in f["message"]
    assert [(s["line"], s["note"]) for s in f["chain"][1:]] == [
        (45, "'qm_poll_threads' is a module parameter: the default can be changed at load time"),
        (44, "'qm_poll_threads' = 'NR_CPUS'"),
        (44, "CPU count NR_CPUS (CONFIG_NR_CPUS, 8192 on distribution kernels)"),
    ]


def test_without_ripgrep_the_grep_search_gives_the_same_findings(monkeypatch):
    from wqlint.scan import index
    real = index.tools.which
    monkeypatch.setattr(index.tools, "which", lambda name: None if name == "rg" else real(name))
    doc, _ = scan_json(REPO / "examples" / "demo-tree")
    monkeypatch.undo()
    again, _ = scan_json(REPO / "examples" / "demo-tree")
    assert doc["findings"] == again["findings"] and len(doc["findings"]) > 10


@pytest.mark.parametrize("version,needle", [
    ("6.1", "per NUMA node"),
    ("6.6", "per CPU (636b927eba5b)"),
    ("6.8", "per CPU (636b927eba5b)"),
    ("6.6.30", "per CPU (636b927eba5b)"),
    ("6.9", "system-wide (5797b1c18919)"),
    ("6.12", "system-wide (5797b1c18919)"),
])
def test_message_states_the_versions_consequence(version, needle):
    doc, _ = scan_json(REPO / "examples" / "demo-tree" / "fs" / "cryptfs", "--kernel-version", version)
    f = next(f for f in doc["findings"] if f["rule"] == "unbound-max-active-cpu-count")
    assert needle in f["message"]
    if needle.startswith("per CPU"):
        assert "with 96 CPUs max_active = 96, up to 96 x 96 = 9216 in-flight items" in f["message"]


def test_unbound_one_on_old_kernels_warns_of_the_upgrade():
    doc, _ = scan_json(REPO / "examples" / "demo-tree" / "lib", "--kernel-version", "6.1")
    f = next(f for f in doc["findings"] if f["rule"] == "unbound-max-active-one" and f["line"] == 16)
    assert "still ordered implicitly" in f["message"] and "breaks on upgrade" in f["message"]


def test_each_read_of_a_field_is_its_own_step():
    doc, _ = scan_json(FIXTURES / "rules" / "fields.c")
    chains = {f["line"]: [(s["line"], s["note"]) for s in f["chain"]] for f in doc["findings"]}
    assert chains[18][1] == (18, "'info' field 'nr_workers'")
    assert chains[26][1:3] == [(23, "local 'n' = 'info->nr_workers'"), (23, "'info' field 'nr_workers'")]
    assert chains[18][-1] == chains[26][-1] == (12, "CPU count num_online_cpus()")


def _over_limit(version):
    doc, _ = scan_json(rule_fixture("max-active-over-limit.c"), "--kernel-version", version)
    return {f["line"]: f for f in doc["findings"] if f["rule"] == "max-active-over-limit"}


def test_over_limit_run_time_input_capped_by_a_cpu_count():
    """nr_queues is 1 or min(token, num_online_cpus()), queue_depth 128 or the user's token: with
    as many queues as CPUs and the default depth, 17 CPUs give 2176 > 2048 on v7.3."""
    got = _over_limit("7.3")
    assert sorted(got) == [46, 48, 50, 52, 80]  # 80: 'if (k > 1024)' only warns
    assert "from 33 CPUs on it is 2112," in got[80]["message"]
    f = got[46]
    assert "(from 17 CPUs on it can reach 2176, over WQ_MAX_ACTIVE (2048) on v7.3: the queue gets 2048)" \
        in f["message"]
    assert [(s["line"], s["note"]) for s in f["chain"]] == [
        (46, "alloc_workqueue(flags 'WQ_UNBOUND', max_active 'opts->nr_queues * opts->queue_depth')"),
        (46, "'opts' field 'nr_queues'"),
        (26, "field 'nr_queues' = 'min(token, num_online_cpus())'"),
        (26, "CPU count num_online_cpus()"),
        (46, "'opts' field 'queue_depth'"),
        (23, "field 'queue_depth' = 'BLK_DEF_QUEUE_DEPTH'"),
        (7, "macro BLK_DEF_QUEUE_DEPTH = '128'"),
    ]
    assert "from 129 CPUs on it is 2064" in got[52]["message"] and "through blk_make()" in got[52]["message"]
    assert [s["line"] for s in got[52]["chain"]] == [52, 37, 37, 52, 52]


def test_over_limit_follows_the_limit_of_the_version():
    """v6.12 (WQ_MAX_ACTIVE 512): 2 * num_online_cpus() goes over from 257 CPUs, and the min_t()
    cap of 64 CPUs times 16 (1024) from 33, the local capped at 1024 from 9; a min_t() with
    WQ_MAX_ACTIVE never, nor a product with a factor nothing bounds."""
    got = _over_limit("6.12")
    assert sorted(got) == [46, 48, 50, 52, 55, 58, 70, 80, 91]
    assert "from 5 CPUs on it can reach 640," in got[46]["message"]
    assert "from 257 CPUs on it is 514," in got[55]["message"]
    assert "from 33 CPUs on it is 528," in got[58]["message"]
    assert "from 9 CPUs on it is 576," in got[70]["message"]  # 'if (m > 1024) m = 1024'
    assert "from 9 CPUs on it is 576," in got[91]["message"]  # 'if (k > 1024) return -EINVAL'


def test_a_comparison_that_caps_a_local_bounds_it():
    """'if (m > 1024) m = 1024;': on the other arm m was at most 1024 already; the same after
    'if (k > 1024) return', not after an if that only warns."""
    doc, _ = scan_json(rule_fixture("max-active-over-limit.c"), "--kernel-version", "7.3")
    f = next(f for f in doc["findings"] if f["line"] == 70)
    assert f["rule"] == "unbound-max-active-cpu-count"
    assert "with 96 CPUs up to 1024 in-flight items" in f["message"]
    assert [(s["line"], s["note"]) for s in f["chain"]][1:3] == [
        (66, "local 'm' is at most '1024' here"), (65, "local 'm' = 'num_online_cpus() * 64'")]
    chains = {f["line"]: [s["line"] for s in f["chain"]] for f in doc["findings"]
              if f["rule"] == "unbound-max-active-cpu-count"}
    assert chains[80] == [80, 75, 75] and chains[91] == [91, 87, 85, 85]


def test_a_flag_passed_as_max_active_says_what_the_queue_gets():
    """The xe GGTT queue's bug (WQ_MEM_RECLAIM as max_active): the limit the queue really gets
    and the flag it lacks; through a wrapper, the chain from its caller's argument to the
    enumerator."""
    doc, _ = scan_json(rule_fixture("flag-as-max-active.c"), "--kernel-version", "7.3")
    got = {f["line"]: f for f in doc["findings"] if f["rule"] == "flag-as-max-active"}
    assert sorted(got) == [23, 25, 27, 29]
    assert got[23]["severity"] == "error"
    assert got[23]["message"].endswith("(WQ_MEM_RECLAIM passed as max_active: the queue gets max_active 8, "
                                       "and lacks WQ_MEM_RECLAIM)")
    assert got[23]["migration"].startswith("Move WQ_MEM_RECLAIM into the flags argument of alloc_workqueue()")
    assert got[27]["message"].endswith("(WQ_UNBOUND passed as max_active: the queue gets max_active 2, "
                                       "and lacks WQ_UNBOUND)")
    assert got[29]["message"].endswith("(WQ_HIGHPRI | WQ_MEM_RECLAIM passed as max_active: the queue gets "
                                       "max_active 24, and lacks WQ_HIGHPRI | WQ_MEM_RECLAIM through ggtt_make())")
    assert [(s["path"], s["line"], s["note"]) for s in got[29]["chain"]] == [
        ("flag-as-max-active.c", 29, "calls ggtt_make()"),
        ("flag-as-max-active.c", 15, "alloc_workqueue(flags 'flags', max_active 'max')"),
        ("flag-as-max-active.c", 15, "'max' is parameter 3 of ggtt_make()"),
        ("flag-as-max-active.c", 29, "'max' <- argument 3 'WQ_HIGHPRI | WQ_MEM_RECLAIM' of ggtt_make()"),
        ("<wqlint>/include/linux/workqueue.h", 8, "enumerator WQ_HIGHPRI"),
        ("<wqlint>/include/linux/workqueue.h", 7, "enumerator WQ_MEM_RECLAIM")]
