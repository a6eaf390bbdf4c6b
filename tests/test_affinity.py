"""missing-affinity-flag and conflicting-affinity-flags as each version judges them: exact
findings, severities and messages on a v7.3-style tree and a 6.12-style one."""
from __future__ import annotations

from conftest import FIXTURES
from helpers import run, scan_json
from wqlint import api, catalogue

V7_MISSING = ("alloc_workqueue() without WQ_PERCPU or WQ_UNBOUND: the kernel WARN_ONCEs at allocation "
              "and makes the queue WQ_PERCPU (21c05ca88a54); WARN_ONCE reports only the first such "
              "queue per boot")
V7_BOTH = ("workqueue with both WQ_PERCPU and WQ_UNBOUND: the kernel WARN_ONCEs at allocation and "
           "drops WQ_PERCPU, keeping WQ_UNBOUND (21c05ca88a54); WARN_ONCE reports only the first "
           "such queue per boot")
V6_MISSING = "alloc_workqueue() without WQ_PERCPU or WQ_UNBOUND: say which one, unbound is becoming the default"
V6_BOTH = ("workqueue with both WQ_PERCPU and WQ_UNBOUND: the kernel reads only WQ_UNBOUND, so the "
           "queue is unbound; from v7.2 it WARN_ONCEs (21c05ca88a54): drop WQ_PERCPU")


def findings(tree, version):
    doc, _ = scan_json(tree / "drivers" / "aff", "--kernel-version", version)
    return [(f["line"], f["rule"], f["severity"], f["message"]) for f in doc["findings"]]


def test_v7_warns_as_the_kernel_does():
    assert findings(FIXTURES / "mainline", "7.3") == [
        (21, "missing-affinity-flag", "warning", V7_MISSING),
        (25, "conflicting-affinity-flags", "warning", V7_BOTH),
        (27, "conflicting-affinity-flags", "warning",
         V7_BOTH + " (alloc_ordered_workqueue() adds WQ_UNBOUND)"),
        (29, "conflicting-affinity-flags", "warning",
         V7_BOTH + " (devm_alloc_ordered_workqueue() adds WQ_UNBOUND)"),
        (33, "conflicting-affinity-flags", "warning",
         V7_BOTH + " (alloc_ordered_workqueue() adds WQ_UNBOUND; "
                   "through aff_ordered() -> alloc_ordered_workqueue())"),
        (39, "conflicting-affinity-flags", "warning",
         V7_BOTH + " (flags are conditional; some values have both)"),
    ]


def test_v6_12_is_a_note_and_wq_bh_alone_is_right():
    """6.12's __WQ_BH_ALLOWS has no WQ_PERCPU: WQ_BH alone says where the work runs."""
    assert findings(FIXTURES / "mainline-6.12", "6.12") == [
        (13, "missing-affinity-flag", "note", V6_MISSING),
        (15, "conflicting-affinity-flags", "note", V6_BOTH),
        (17, "conflicting-affinity-flags", "note", V6_BOTH + " (alloc_ordered_workqueue() adds WQ_UNBOUND)"),
    ]


def test_without_wq_percpu_neither_rule_exists(tmp_path):
    src = tmp_path / "drv.c"
    src.write_text('#include <linux/workqueue.h>\n'
                   'int f(void) { return !alloc_workqueue("drv", WQ_UNBOUND | WQ_BH, 0); }\n'
                   'int g(void) { return !alloc_workqueue("drv", WQ_BH, 0); }\n')
    doc, _ = scan_json(src, "--kernel-version", "6.1")
    assert doc["findings"] == []
    doc, _ = scan_json(src, "--kernel-version", "7.3")  # the built-in v7.3 header: WQ_BH needs WQ_PERCPU
    assert [(f["line"], f["rule"]) for f in doc["findings"]] == [(3, "missing-affinity-flag")]


def test_builtin_header_bh_allows_follows_the_version():
    assert "__WQ_BH_ALLOWS = WQ_BH | WQ_HIGHPRI | WQ_PERCPU," in api.builtin_header((7, 3, 0)).decode()
    assert "__WQ_BH_ALLOWS = WQ_BH | WQ_HIGHPRI," in api.builtin_header((6, 12, 0)).decode()
    assert "__WQ_BH_ALLOWS" not in api.builtin_header((6, 1, 0)).decode()


def test_severity_by_version_in_the_catalogue():
    cat = catalogue.load()
    rule = cat["missing-affinity-flag"]
    assert (rule.severity_on((7, 2, 0)), rule.severity_on((7, 1, 9))) == ("warning", "note")
    assert rule.message_on((6, 12, 0)) == rule.message == V6_MISSING
    assert rule.severity_text() == "warning on >=7.2, else note"
    assert "Severity on >=7.2: warning" in rule.doc_text()


def test_by_version_is_loaded_strictly(tmp_path):
    from pathlib import Path
    text = (Path(catalogue.default_path())).read_text()
    bad = tmp_path / "rules.yaml"
    bad.write_text(text.replace("        severity: warning\n        message: \"alloc_workqueue() without",
                                "        severity: loud\n        message: \"alloc_workqueue() without", 1))
    result = run("rules", "--rules", bad)
    assert result.exit_code == 2 and "severity 'loud' is not one of error, warning, note" in result.stderr
    bad.write_text(text.replace('      - versions: ">=7.2"\n        severity: warning\n        message:',
                                '      - versions: ">=7.2"\n        colour: red\n        message:', 1))
    result = run("rules", "--rules", bad)
    assert result.exit_code == 2 and "by-version case: unknown key 'colour'" in result.stderr
    bad.write_text(text.replace(
        '      - versions: "<7.2"\n        severity: note\n        message: "workqueue with both WQ_PERCPU and WQ_UNBOUND: the kernel reads only WQ_UNBOUND, so the queue is unbound; from v7.2 it WARN_ONCEs (21c05ca88a54): drop WQ_PERCPU"\n',
        '      - versions: "<7.2"\n', 1))
    result = run("rules", "--rules", bad)
    assert result.exit_code == 2 and "give a severity, a message or both" in result.stderr


def test_v7_messages_state_the_2048_cap_and_the_cache_shard_pods():
    doc, _ = scan_json(FIXTURES / "mainline" / "drivers" / "big", "--kernel-version", "7.3")
    got = {(f["line"], f["rule"]): f for f in doc["findings"]}
    assert sorted(got) == [(12, "max-active-over-limit"), (12, "unbound-max-active-cpu-count"),
                           (14, "max-active-over-limit"), (14, "percpu-max-active-cpu-count")]
    assert got[12, "unbound-max-active-cpu-count"]["message"].endswith(
        "with 96 CPUs up to 2048 in-flight items (max_active 6144 is clamped to WQ_MAX_ACTIVE, "
        "2048 on v7.3, with a pr_warn at allocation))")
    assert ("workqueue_set_pod_max_active(); the default scope is cache_shard since v7.1 "
            "(4cdc8a7389d5): pods of up to workqueue.cache_shard_size cores, 8 by default, within "
            "one last-level cache)") in got[12, "unbound-max-active-cpu-count"]["migration"]
    assert got[12, "max-active-over-limit"]["message"].endswith(
        "(from 33 CPUs on it is 2112, over WQ_MAX_ACTIVE (2048) on v7.3: the queue gets 2048)")
    assert [s["line"] for s in got[12, "max-active-over-limit"]["chain"]] == [12, 9, 9]
    assert ("with 96 CPUs max_active = 3076, up to 96 x 2048 = 196608 in-flight items (max_active "
            "3076 is clamped to WQ_MAX_ACTIVE, 2048 on v7.3, with a pr_warn at allocation)"
            ) in got[14, "percpu-max-active-cpu-count"]["message"]
    assert got[14, "max-active-over-limit"]["message"].endswith(
        "(from 64 CPUs on it is 2052, over WQ_MAX_ACTIVE (2048) on v7.3: the queue gets 2048)")
    # v6.12: 512, and no cache_shard.
    doc, _ = scan_json(FIXTURES / "mainline" / "drivers" / "big", "--kernel-version", "6.12")
    f = next(f for f in doc["findings"] if f["rule"] == "unbound-max-active-cpu-count")
    assert "up to 512 in-flight items (max_active 6144 is clamped to WQ_MAX_ACTIVE, 512 on v6.12" in f["message"]
    assert "cache_shard" not in f["migration"]


def test_legacy_flag_written_by_hand_still_needs_an_affinity_flag(tmp_path):
    """Only a create_*workqueue() call is left to legacy-create-workqueue: an alloc_workqueue()
    that writes __WQ_LEGACY itself (6.12's tegra194-cpufreq.c) lacks the affinity flag too."""
    import shutil
    tree = tmp_path / "linux"
    shutil.copytree(FIXTURES / "mainline-6.12" / "include", tree / "include")
    shutil.copy(FIXTURES / "mainline-6.12" / "Makefile", tree / "Makefile")
    with open(tree / "include" / "linux" / "workqueue.h", "a") as fh:
        fh.write('\n#define create_workqueue(name)\t\t\t\t\t\t\\\n'
                 '\talloc_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, 1, (name))\n')
    (tree / "drivers" / "leg").mkdir(parents=True)
    (tree / "drivers" / "leg" / "leg.c").write_text(
        '#include <linux/workqueue.h>\n'
        'struct workqueue_struct *a, *b, *c;\n'
        'int leg_init(void)\n'
        '{\n'
        '\ta = alloc_workqueue("leg_hand", __WQ_LEGACY, 1);\n'
        '\tb = create_workqueue("leg_macro");\n'
        '\tc = alloc_workqueue("leg_unbound", __WQ_LEGACY | WQ_UNBOUND, 1);\n'
        '\treturn 0;\n'
        '}\n')
    doc, _ = scan_json(tree / "drivers" / "leg", "--kernel-version", "6.12")
    assert sorted((f["line"], f["rule"]) for f in doc["findings"]) == [
        (5, "internal-workqueue-flag"), (5, "missing-affinity-flag"),
        (6, "legacy-create-workqueue"),
        (7, "internal-workqueue-flag"), (7, "unbound-max-active-one")]


def test_the_api_headers_own_macros_are_no_allocation_when_unused(tmp_path):
    """A tree whose code calls no create_*workqueue(): the header's definitions of them are
    the API, not queues of the tree (no finding of any rule there), a driver's unused macro is."""
    import shutil
    tree = tmp_path / "linux"
    shutil.copytree(FIXTURES / "mainline-6.12" / "include", tree / "include")
    shutil.copy(FIXTURES / "mainline-6.12" / "Makefile", tree / "Makefile")
    with open(tree / "include" / "linux" / "workqueue.h", "a") as fh:
        fh.write('\n#define create_workqueue(name)\t\t\t\t\t\t\\\n'
                 '\talloc_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, 1, (name))\n'
                 '#define create_freezable_workqueue(name)\t\t\t\t\\\n'
                 '\talloc_workqueue("%s", __WQ_LEGACY | WQ_FREEZABLE | WQ_UNBOUND |\t\\\n'
                 '\t\t\tWQ_MEM_RECLAIM, 1, (name))\n')
    (tree / "drivers" / "unused").mkdir(parents=True)
    (tree / "drivers" / "unused" / "unused.h").write_text(
        '#include <linux/workqueue.h>\n'
        '#define unused_wq(name) alloc_workqueue("%s", 0, 1, (name))\n')
    doc, _ = scan_json(tree, "--kernel-version", "6.12")
    assert sorted((f["path"], f["line"], f["rule"]) for f in doc["findings"]) == [
        ("drivers/unused/unused.h", 2, "missing-affinity-flag")]
