"""Edits of real linux-source-7.3 files that a review must not take for new findings: a queue
renamed on an existing create_singlethread_workqueue() call, a function moved to another file
and renamed (amdgpu_dm), and, without --tree, a hunk whose context ends inside an unchanged
call (idpf). The patches are made from the tree with difflib, as git would write them."""
from __future__ import annotations

import difflib
import json

import pytest

from helpers import run

AMD = "drivers/gpu/drm/amd/display/amdgpu_dm/"
IDPF = "drivers/net/ethernet/intel/idpf/idpf_main.c"


def write_patch(tree, edits: dict, subject: str, out, context: int = 3):
    parts = []
    for rel, new in edits.items():
        old = (tree / rel).read_text()
        parts.append(f"diff --git a/{rel} b/{rel}\n" + "".join(difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}", n=context)))
    out.write_text(f"From: Dev Eloper <dev@example.org>\nSubject: [PATCH] {subject}\n"
                   f"Message-ID: <{out.stem}@example.org>\n\n{subject}.\n---\n" + "".join(parts))
    return out


@pytest.mark.kernel
def test_queue_renamed_on_an_existing_legacy_call(linux_7_3, tmp_path):
    rel = AMD + "amdgpu_dm.c"
    text = (linux_7_3 / rel).read_text()
    old = 'create_singlethread_workqueue("amdgpu_dm_hpd_wq")'
    assert text.count(old) == 1
    patch = write_patch(linux_7_3, {rel: text.replace(old, 'create_singlethread_workqueue("amdgpu_dm_hpd_work")')},
                        "drm/amd/display: rename the hpd queue", tmp_path / "rename.patch")
    result = run("review", patch, "--tree", linux_7_3, "-j", "2")
    assert (result.exit_code, result.stdout) == (0, ""), result.stderr
    line = text[:text.index(old)].count("\n") + 1
    found = json.loads(run("review", patch, "--tree", linux_7_3, "-j", "2", "--all", "--format", "json").stdout)
    at = [(f["state"], f["rule"]) for f in found["findings"] if (f["path"], f["line"]) == (rel, line)]
    assert at == [("pre-existing", "legacy-create-workqueue")]
    assert found["fixed"] == []


@pytest.mark.kernel
def test_function_moved_to_another_file_and_renamed(linux_7_3, tmp_path):
    irq, dm = (linux_7_3 / AMD / "amdgpu_dm_irq.c").read_text(), (linux_7_3 / AMD / "amdgpu_dm.c").read_text()
    start = irq.index("struct hpd_rx_irq_offload_work_queue *amdgpu_dm_hpd_rx_irq_create_workqueue(")
    end = irq.index("\n}\n", start) + 3
    moved = irq[start:end].replace("amdgpu_dm_hpd_rx_irq_create_workqueue", "hpd_rx_irq_create_workqueue")
    at = dm.index("static int amdgpu_dm_init(")
    new_dm = (dm[:at] + moved + "\n" + dm[at:]).replace("amdgpu_dm_hpd_rx_irq_create_workqueue(",
                                                         "hpd_rx_irq_create_workqueue(")
    patch = write_patch(linux_7_3, {AMD + "amdgpu_dm_irq.c": irq[:start] + irq[end:].lstrip("\n"),
                                    AMD + "amdgpu_dm.c": new_dm},
                        "drm/amd/display: move the hpd rx offload queues into amdgpu_dm.c", tmp_path / "move.patch")
    result = run("review", patch, "--tree", linux_7_3, "-j", "2")
    assert (result.exit_code, result.stdout) == (0, ""), result.stderr
    found = json.loads(run("review", patch, "--tree", linux_7_3, "-j", "2", "--all", "--format", "json").stdout)
    moved_finding = [f for f in found["findings"] if f["identity"]["function"] == "hpd_rx_irq_create_workqueue"]
    assert [(f["state"], f["rule"], f["path"]) for f in moved_finding] == [
        ("pre-existing", "legacy-create-workqueue", AMD + "amdgpu_dm.c")]
    assert found["fixed"] == []
    # the stable fingerprint is the one the scan of the tree gives the call before the move
    before = json.loads(run("scan", linux_7_3 / AMD / "amdgpu_dm_irq.c", "--format", "json").stdout)["findings"]
    assert moved_finding[0]["stable_fingerprint"] in {f["stable_fingerprint"] for f in before}


@pytest.mark.kernel
def test_no_tree_hunk_context_ending_inside_a_call(linux_7_3, tmp_path):
    text = (linux_7_3 / IDPF).read_text()
    old = "\t\terr = -ENOMEM;\n\t\tgoto err_init_wq;\n"
    assert text.count(old) == 1
    new = text.replace(old, "\t\terr = -ENOMEM;\n\t\tgoto err_init_wq; /* nothing to undo */\n")
    patch = write_patch(linux_7_3, {IDPF: new}, "idpf: say why", tmp_path / "idpf.patch")
    assert patch.read_text().rstrip().endswith('adapter->serv_wq = alloc_workqueue("%s-%s-service",')
    result = run("review", patch, "--kernel-version", "7.3", "-j", "1")
    assert (result.exit_code, result.stdout) == (0, "")
    line = text[:text.index('adapter->serv_wq = alloc_workqueue(')].count("\n") + 1
    assert result.stderr.splitlines()[-1] == (
        f"wqlint: {IDPF}: line {line}: cannot parse the call to alloc_workqueue(): not judged (without --tree "
        "only the lines the hunks show are known)")
