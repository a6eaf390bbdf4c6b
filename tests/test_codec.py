"""scan.codec: typed values as JSON data and back, checked against their declared types."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import pytest

from wqlint import catalogue
from wqlint.finding import Step
from wqlint.scan.site import Site
from wqlint.scan import codec, engine, store
from wqlint.scan.targets import Targets
from wqlint.scan.values import Alt, Const, CpuCount, Op, Unknown

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Box:
    step: Optional[Step]
    value: Union[int, str, tuple[int, ...]]
    raw: bytes
    names: frozenset[str]
    by_pos: dict[tuple[str, int], str]


def test_round_trip_of_a_real_scan():
    """Every scan of the fixture trees comes back equal, Steps shared as they were."""
    cat = catalogue.load(REPO / "rules.yaml")
    c = codec.Codec(store.Analysis, shared=(Step,))
    done = 0
    for tree in ("review/tree", "mainline", "check7"):
        root = REPO / "tests" / "fixtures" / tree
        if not root.is_dir():
            continue
        eng = engine.Engine(Targets([str(root)]), cat, engine.ScanOptions())
        got = eng.analysis()
        data = json.loads(json.dumps(c.encode(got)))
        back = c.decode(data)
        assert back == got
        assert back.sites and [s.flags for s in back.sites] == [s.flags for s in got.sites]
        done += 1
    assert done >= 2


def test_a_site_is_kept_once_however_many_flows_carry_it():
    """A Site (its fields lists, not hashable) named by the sites of a scan and by each of
    its flows is stored once and read back as one object; its row names the Steps' table. A
    Step that names a Site (the table after its own) is not read."""
    cat = catalogue.load(REPO / "rules.yaml")
    root = REPO / "tests" / "fixtures" / "mainline"
    got = engine.Engine(Targets([str(root)]), cat, engine.ScanOptions()).analysis()
    assert got.flows, "the fixture tree has works reaching a flush"
    c = codec.Codec(store.Analysis, shared=(Step, Site))
    data = json.loads(json.dumps(c.encode(got)))
    rows = data["shared"]["Site"]
    assert len(rows) == len({json.dumps(r) for r in rows})
    distinct = []
    for site in list(got.sites) + [f.site for f in got.flows] + [s for f in got.flows for s in f.target.sites]:
        if site not in distinct:
            distinct.append(site)
    assert len(rows) == len(distinct)
    back = c.decode(data)
    assert back == got
    by_id = {id(s) for s in back.sites}
    assert all(id(f.site) in by_id for f in back.flows if f.site in back.sites)
    assert sum(f.site in back.sites for f in back.flows) > 0

    @dataclass(frozen=True)
    class Holder:
        site: Site
    h = codec.Codec(Holder, shared=(Site, Step))
    data = json.loads(json.dumps(h.encode(Holder(got.flows[0].site))))
    with pytest.raises(codec.Invalid):
        h.decode(data)  # the Site's row names a Step before the Steps' table is read


def test_values_and_their_steps():
    step = Step("a.c", 3, "x = num_online_cpus();", "CPU count", ("wrap", 1))
    value = Op(None, "+", (Alt(step, (CpuCount(step, "num_online_cpus()"), Const(None, 2)), "ternary"),
                           Unknown(step, "why")))
    c = codec.Codec(codec_value_type(), shared=(Step,))
    data = c.encode(value)
    assert data["shared"]["Step"] == [["Step", "a.c", 3, "x = num_online_cpus();", "CPU count", ["wrap", 1], None]]
    back = c.decode(json.loads(json.dumps(data)))
    assert back == value and type(back.args[0].options[0]) is CpuCount


def test_an_alternative_keeps_what_it_marks():
    """Alt.mark (a Mark or None: an Enum in a union) comes back as stored; a mark that is no
    Mark is Invalid."""
    from wqlint.scan.values import Mark
    step = Step("a.c", 4, "if (x)", "if 'x' is true")
    value = Op(None, "|", (Alt(step, (Const(None, 2),), "", mark=Mark.CONDITION), Alt(None, (Const(None, 1),), "")))
    c = codec.Codec(codec_value_type(), shared=(Step,))
    data = json.loads(json.dumps(c.encode(value)))
    back = c.decode(data)
    assert back == value and [a.mark for a in back.args] == [Mark.CONDITION, None]
    data["value"][3][0][-1] = "elsewhere"
    with pytest.raises(codec.Invalid):
        c.decode(data)


def codec_value_type():
    from wqlint.scan.values import Value
    return Value


def test_bytes_str_unions_and_pairs():
    c = codec.Codec(Box, shared=(Step,))
    box = Box(None, (1, 2), b"\xff\x00ok", frozenset({"a", "b"}), {("x.c", 4): "f"})
    data = json.loads(json.dumps(c.encode(box)))
    assert c.decode(data) == box
    for v in (3, "s"):
        assert c.decode(json.loads(json.dumps(c.encode(Box(None, v, b"", frozenset(), {}))))).value == v


@pytest.mark.parametrize("damage", [
    lambda d: d["value"].__setitem__(0, "Step"),          # another class in its place
    lambda d: d["value"].__setitem__(1, 0),               # a Step that is not in the table
    lambda d: d["value"].__setitem__(2, 1.5),             # a float for a union of int, str, tuple
    lambda d: d["value"].__setitem__(2, True),            # a bool is no int
    lambda d: d["value"].__setitem__(3, "\u0100"),        # not a latin-1 byte
    lambda d: d["value"].__setitem__(4, ["a", 1]),        # an int among str
    lambda d: d["value"].__setitem__(5, [["x.c", 4]]),    # not a pair
    lambda d: d["value"].__setitem__(5, [[["x.c", "4"], "f"]]),  # a str for the int of a key
    lambda d: d["value"].pop(),                           # a field missing
    lambda d: d["value"].append(1),                       # a field too many
    lambda d: d.__setitem__("value", ["os.system", "x"]),  # a name of code
    lambda d: d["shared"].pop("Step"),
    lambda d: d.__setitem__("value", [[]] * 10),
])
def test_anything_else_is_invalid(damage):
    c = codec.Codec(Box, shared=(Step,))
    data = json.loads(json.dumps(c.encode(Box(None, 1, b"", frozenset({"a"}), {("x.c", 4): "f"}))))
    damage(data)
    with pytest.raises(codec.Invalid):
        c.decode(data)


def test_deep_data_is_invalid_not_a_crash():
    from wqlint.scan.values import Value
    c = codec.Codec(Value, shared=(Step,))
    data = {"shared": {"Step": []}, "value": None}
    node: list = ["Const", None, 1]
    for _ in range(100_000):
        node = ["Alt", None, [node], "", []]
    data["value"] = node
    with pytest.raises(codec.Invalid):
        c.decode(data)


def test_what_it_cannot_store():
    c = codec.Codec(Box, shared=(Step,))
    with pytest.raises(codec.Unstorable):
        c.encode(Box(None, 1.5, b"", frozenset(), {}))
    with pytest.raises(codec.Unstorable):
        c.encode(Box(None, 1, "not bytes", frozenset(), {}))

    @dataclass
    class Loose:
        anything: tuple
    with pytest.raises(TypeError):
        codec.Codec(Loose)


def test_the_index_can_store_what_it_keeps():
    """Every class the index keeps declares types the codec can read back (a new field typed
    as a bare tuple or object would make the index go unused: store._codec)."""
    for kind in (store.Analysis, store.Kept, store.Answers):
        codec.Codec(kind, shared=(Step,))
        store._codec(kind)


def test_a_step_keeps_where_its_value_was_found():
    """Step.origin (not part of a Step's equality) comes back as stored; a kind of place
    that is no Via is Invalid."""
    from wqlint.finding import Origin, Via
    c = codec.Codec(Box, shared=(Step,))
    step = Step("a.c", 3, "#define X 4", "macro X = '4'", origin=Origin(Via.MACRO, "X"))
    data = json.loads(json.dumps(c.encode(Box(step, 1, b"", frozenset(), {}))))
    assert c.decode(data).step.origin == Origin(Via.MACRO, "X")
    data["shared"]["Step"][0][-1][1] = "elsewhere"
    with pytest.raises(codec.Invalid):
        c.decode(data)


def test_steps_alike_but_for_a_field_left_out_of_equality_stay_apart():
    from wqlint.finding import Origin, Via
    a = Step("a.c", 3, "x = N;", "macro N", origin=Origin(Via.MACRO, "N"))
    b = Step("a.c", 3, "x = N;", "macro N", origin=None)
    assert a == b
    c = codec.Codec(tuple[Step, ...], shared=(Step,))
    back = c.decode(json.loads(json.dumps(c.encode((a, b, a)))))
    assert [s.origin for s in back] == [a.origin, None, a.origin]
