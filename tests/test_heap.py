"""Giving freed memory back to the system: found where the C library has it, harmless
wherever it is asked for."""
import platform

from wqlint.scan import heap


def test_the_c_librarys_trim_is_found_on_glibc():
    if platform.libc_ver()[0] != "glibc":
        assert heap._trim() is None or callable(heap._trim())
    else:
        assert callable(heap._trim())


def test_release_may_be_called_at_any_time():
    data = [bytes(100_000) for _ in range(50)]
    del data
    heap.release()
    heap.release()
