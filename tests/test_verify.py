"""wqlint bulk --verify: which CONFIG_ options an x86 build needs to compile a touched file's
object, read from a small tree of Kbuild files the way Kbuild descends into them."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from wqlint.fix.verify import VerifyError, config_options, judged_from, touched_files

KBUILD = {
    "Kbuild": "obj-y += kernel/ drivers/\nobj-$(CONFIG_BLOCK) += block/\nobj-$(CONFIG_NET) += net/\n",
    "kernel/Makefile": "obj-y = workqueue.o\n",
    "block/Makefile": "obj-$(CONFIG_BLOCK) := bio.o\n",
    "drivers/Makefile": "obj-$(CONFIG_MD) += md/\nobj-$(CONFIG_S390) += s390/\n"
                        "obj-y += firmware/\nobj-$(CONFIG_MLX) += net/mlx/core/\n",
    # a composite object, and a file named both in a composite and in its own obj- line
    "drivers/md/Makefile": "dm-mod-y += dm.o \\\n\tdm-table.o\nobj-$(CONFIG_BLK_DEV_DM) += dm-mod.o\n"
                           "snd-accdet-y := accdet.o\nobj-$(CONFIG_ACCDET) += accdet.o\n",
    # -objs lists, variables, an included file naming sub/ paths
    "drivers/firmware/Makefile": "include $(src)/common/Makefile\nffa-driver-y = driver.o\n"
                                 "ffa-module-objs := $(ffa-driver-y)\nobj-$(CONFIG_FFA) += ffa-module.o\n"
                                 "habana-y := $(HL_COMMON_FILES)\nobj-$(CONFIG_HABANA) += habana.o\n",
    "drivers/firmware/common/Makefile": "HL_COMMON_FILES := common/device.o common/irq.o\n",
    "drivers/net/mlx/core/Makefile": "mlx-y := main.o lag/lag.o\nobj-$(CONFIG_MLX) += mlx.o\n",
    "drivers/s390/Makefile": "obj-y += css.o\n",
    "net/Makefile": "mac-objs := main.o\nobj-$(CONFIG_MAC) += mac.o\n",
}


@pytest.fixture
def tree(tmp_path) -> Path:
    for rel, text in KBUILD.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize("rel, options", [
    ("kernel/workqueue.c", []),
    ("block/bio.c", ["BLOCK"]),
    ("drivers/md/dm-table.c", ["BLK_DEV_DM", "MD"]),
    ("drivers/md/accdet.c", ["ACCDET", "MD"]),
    ("drivers/firmware/driver.c", ["FFA"]),
    ("drivers/firmware/common/device.c", ["HABANA"]),
    ("drivers/net/mlx/core/lag/lag.c", ["MLX"]),
    ("net/main.c", ["MAC", "NET"]),
    ("drivers/s390/css.c", ["S390"]),
    ("drivers/md/unlisted.c", None),
    ("arch/s390/kernel/time.c", None),
    ("tools/testing/nvdimm/test/nfit.c", None),
])
def test_config_options(tree, rel, options):
    assert config_options(tree, rel) == options


def test_touched_files_are_read_from_the_patches(tmp_path):
    one, two = tmp_path / "0001-a.patch", tmp_path / "0002-b.patch"
    one.write_text("--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n--- a/y/z.c\n+++ b/y/z.c\n")
    two.write_text("--- a/x.c\n+++ b/x.c\n+++ b/not a path\n")
    assert touched_files([two, one]) == ["x.c", "y/z.c"]


@pytest.mark.parametrize("name", ["../outside.c", "y/../../outside.c", "/etc/passwd"])
def test_a_patch_naming_a_file_outside_the_tree_is_refused(tmp_path, name):
    # verify compiles and may copy back each touched file: none may lie outside the scratch tree
    patch = tmp_path / "0001-a.patch"
    patch.write_text(f"--- a/x.c\n+++ b/x.c\n--- a/{name}\n+++ b/{name}\n")
    with pytest.raises(VerifyError, match=f"0001-a.patch: names a file outside the tree: {re.escape(name)}"):
        touched_files([patch])


def test_kconfig_names_what_enables_an_option(tmp_path):
    (tmp_path / "drivers").mkdir()
    (tmp_path / "arch" / "arm64").mkdir(parents=True)
    (tmp_path / "drivers" / "Kconfig").write_text(
        'config CODEC\n\ttristate\n\n'
        'config BOARD\n\ttristate "A board"\n\tdepends on I2C && (OF || COMPILE_TEST) && !UML\n'
        '\tselect CODEC\n\n'
        'menuconfig I2C\n\tbool "I2C"\n')
    (tmp_path / "arch" / "arm64" / "Kconfig").write_text('config CODEC_ARM\n\tbool "x"\n\tselect CODEC\n')
    from wqlint.fix.verify import Kconfig
    kconfig = Kconfig(tmp_path)
    assert kconfig.enablers("BOARD") == {"I2C", "OF", "COMPILE_TEST"}
    assert kconfig.enablers("CODEC") == {"BOARD"}  # no prompt: a board selects it (not arm64's)
    assert kconfig.enablers("I2C") == set()


def test_the_files_a_fixed_finding_is_judged_from_are_scanned_again():
    """A reclaim-flush-dependency fix edits the flushed queue's allocation; the flush and the
    reclaim queue's allocation may be in files the series does not touch."""
    from wqlint.finding import Finding, Hints
    from wqlint.fix.model import Fix
    flow = Finding("reclaim-flush-dependency", "warning", "drivers/a/flush.c", 9, 2, "m",
                   hints=Hints(judged_with=frozenset({"drivers/a/core.c", "drivers/a/alloc.c", "../outside.c"})))
    fixes = [Fix(flow, "mainline", "safe", "why", at=("drivers/a/alloc.c", 4))]
    assert judged_from(fixes, ["drivers/a/alloc.c"]) == ["drivers/a/alloc.c", "drivers/a/core.c",
                                                         "drivers/a/flush.c"]
