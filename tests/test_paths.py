"""Flags and max_active judged path by path (fixtures/rules/paths.c), struct fields by type."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers import scan_json


@pytest.fixture(scope="module")
def rules_doc():
    doc, _ = scan_json(FIXTURES / "rules", "--kernel-version", "7.3")
    return doc


def chain(doc, path, line, rule):
    found = [f for f in doc["findings"] if (f["path"], f["line"], f["rule"]) == (path, line, rule)]
    assert len(found) == 1, found
    return [(s["line"], s["note"]) for s in found[0]["chain"]]


@pytest.mark.parametrize("line, steps", [
    # Only the arm without WQ_UNBOUND lacks the flag: the chain names it.
    (27, [(24, "'mode' is false"), (22, "local 'flags' = 'WQ_HIGHPRI'")]),
    # A switch without default: no case matching is a path too.
    (67, [(59, "'mode' matches no case"), (58, "local 'flags' = 'WQ_HIGHPRI'")]),
    (79, [(79, "'u' is false")]),
    # The same condition decides both ifs: a true, b false is the one path without.
    (125, [(118, "'a' is true"), (119, "'b' is false"), (117, "local 'flags' = 'WQ_HIGHPRI'")]),
])
def test_missing_affinity_names_the_path(rules_doc, line, steps):
    got = chain(rules_doc, "paths.c", line, "missing-affinity-flag")
    assert got[0][0] == line and got[0][1].startswith("alloc_workqueue(flags ")
    assert got[1:] == steps


def test_flags_and_max_active_set_in_the_same_branch_go_together(rules_doc):
    assert chain(rules_doc, "paths.c", 172, "percpu-max-active-cpu-count")[1:] == [
        (163, "'u' is false"), (168, "local 'max' = 'num_online_cpus()'"),
        (168, "CPU count num_online_cpus()")]
    assert chain(rules_doc, "paths.c", 172, "unbound-max-active-one")[1:] == [
        (163, "'u' is true"), (165, "local 'max' = '1'")]


def test_a_field_takes_assignments_only_from_objects_of_its_struct_type(rules_doc):
    # struct qux_map and a global of it also have nr_hwq = CPU count: not baz_opts' values.
    assert not [f for f in rules_doc["findings"] if f["path"] == "types.c" and f["line"] == 46]
    # container_of(dev, struct corge_dev, dev)->cfg is a struct corge_cfg; baz_opts' depth is not.
    f = next(f for f in rules_doc["findings"] if f["path"] == "types.c" and f["line"] == 64)
    assert [(s["line"], s["note"]) for s in f["chain"][1:]] == [
        (64, "'cfg' field 'depth'"), (53, "field 'depth' = 'num_online_cpus()'"),
        (53, "CPU count num_online_cpus()")]
    assert "other assignments" not in f["message"]
