"""Giving freed memory back to the system: found where the C library has it, harmless
wherever it is asked for."""
import platform
import subprocess
import sys
from pathlib import Path

from wqlint.scan import heap


def test_the_c_librarys_trim_is_found_on_glibc():
    if platform.libc_ver()[0] != "glibc":
        assert heap._trim() is None or callable(heap._trim())
    else:
        assert callable(heap._trim())


def test_release_hands_back_the_pages_freed_between_objects_that_stay(tmp_path):
    """100,000 blocks of 2 KB, every fiftieth kept: freeing the rest leaves the heap's pages
    in place (the blocks kept hold it up); release() hands back the whole free pages. Run in
    a process of its own, whose resident size is its own."""
    if platform.libc_ver()[0] != "glibc" or not Path("/proc/self/statm").exists():
        heap.release()  # harmless where there is no trim
        return
    code = (
        "import os\n"
        "from wqlint.scan import heap\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as f:\n"
        "        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
        "kept, freed = [], []\n"
        "for i in range(100_000):\n"
        "    (kept if i % 50 == 0 else freed).append(bytes(range(256)) * 8 + bytes([i % 256]))\n"
        "del freed\n"
        "before = rss()\n"
        "heap.release()\n"
        "print(before, rss(), len(kept))\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    before, after, kept = map(int, got.stdout.split())
    assert kept == 2000
    assert before - after > 100 * 2**20, (before, after)  # of about 200 MB freed
