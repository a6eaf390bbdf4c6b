"""scan.digests: the files of a kept scan, as the index keeps them (one string), read back as
they were kept, and refused when they are not pairs of a file and a digest."""
from __future__ import annotations

import json

import pytest

from wqlint.scan import codec
from wqlint.scan.digests import Digests
from wqlint.scan.store import Kept, _codec


def _through_index(files: dict) -> Digests:
    kept = Kept(("scan", ("",), "h", (), (7, 3), ()), 1, frozenset(), Digests.of(files), Digests.of({}))
    line = json.dumps(_codec(Kept).encode(kept))
    return _codec(Kept).decode(json.loads(line)).read


def test_files_and_digests_read_back_as_kept():
    """Each file with its digest: a hex digest, '' (bytes not judged whole), None (no
    index), a name outside ASCII (bytes that are not UTF-8, as os.fsdecode gives them)."""
    odd = b"fs/\xe9t\xe9.c".decode("utf-8", "surrogateescape")
    files = {"fs/a.c": "0123abcd" * 4, "fs/b.h": "", "c.c": None, odd: "ff" * 16, "fs/-": "-x"[1:]}
    got = _through_index(files)
    assert dict(got.items()) == files and got == files and len(got) == 5
    assert got.get("fs/b.h") == "" and got.get("fs/none.c") is None and "c.c" in got and "fs/x" not in got
    assert list(got) == list(files)
    empty = _through_index({})
    assert dict(empty) == {} and not empty and empty.get("a") is None


@pytest.mark.parametrize("packed", ["a.c", "a.c//d//b.c", "a//b//c//d//e", "\ud800.c//" + "0" * 32])
def test_what_is_not_pairs_of_a_file_and_a_digest_is_refused(packed):
    """A name without its digest, and a name no file can have (a lone surrogate: not bytes
    that os.fsdecode gives)."""
    with pytest.raises(codec.Invalid):
        Digests(packed)


def test_a_name_that_holds_the_separator_is_not_kept():
    """No file of a tree is named so; were one, the scan is not kept rather than kept wrong."""
    with pytest.raises(codec.Unstorable):
        Digests.of({"a.c": "", "fs//b.c": "00"})
