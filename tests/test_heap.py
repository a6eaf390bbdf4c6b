"""Giving freed memory back to the system is harmless wherever it is asked for."""
from wqlint.scan import heap


def test_release_may_be_called_at_any_time():
    data = [bytes(100_000) for _ in range(50)]
    del data
    heap.release()
    heap.release()
