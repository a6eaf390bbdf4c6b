"""What a scan is asked to do: one frozen ScanOptions, which the engine takes whole (nothing
is set on an engine after it is made)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Union

from wqlint.machine import MAX_CPUS, NCPUS

if TYPE_CHECKING:
    from wqlint.scan.treefiles import TreeFiles
    from wqlint.scan.kerneltree import KernelTree
    from wqlint.scan.store import Store


@dataclass(frozen=True)
class ScanOptions:
    jobs: int = 1  # searches of the tree at once
    kernel_version: Optional[tuple] = None  # the semantics of this version (None: the tree's Makefile)
    # The kernel a module outside any kernel tree builds for: its headers, API and version.
    kernel_tree: Optional[KernelTree] = None
    ncpus: int = NCPUS  # the machine the messages describe
    max_cpus: int = MAX_CPUS  # the largest machine a limit of max_active is judged for
    # How the tree's files are read (None: from disk; an Overlay for a review: the tree as a
    # patch series makes it).
    files: Optional[TreeFiles] = None
    preloaded: Optional[dict] = None  # {rel: bytes} of files held in memory (a checker's unit)
    # The index kept between runs in the user's cache directory (wqlint.scan.store): True to
    # open the tree's, a Store already opened for it, or False. Not used with kernel_tree,
    # whose files it does not follow.
    store: Union[bool, Store] = False
    save_store: bool = True  # write the index when the analysis is done
    # Files whose changes are of interest (a review's): only allocations in their subsystems
    # are resolved; focus_words: the names they use (wrappers they may call). None: all files.
    focus: Optional[tuple] = None
    focus_words: frozenset = frozenset()
    unread: frozenset = frozenset()  # parts of sites no rule that is on reads (wqlint.checks.unread): not built
    keep_suppressed: bool = False  # the report lists what suppression comments hide, too
    progress: Optional[Callable[[str], None]] = None  # told of each round of the search
