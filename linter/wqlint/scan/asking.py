"""What resolving the arguments of one allocation asks of every part of the resolution (the
Resolver of resolve.py and the parts it hands names to): the file of the allocation, how many
expressions it may still visit, whether a queue's name is being resolved, which #if branches
are compiled, and the way back into the resolution for the names a value is made of.

The parts see only this, not the Resolver, so none of them imports resolve.py."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from wqlint.scan.cpp import Decider
    from wqlint.scan.scope import Scope
    from wqlint.scan.values import Value


class Resolve(Protocol):
    """The Value of an expression node in scope (resolve.Resolver.resolve)."""

    def __call__(self, node, scope: Scope, depth: int = 0, seen: frozenset = frozenset(),
                 expand_params: bool = False) -> Value: ...


class Asking:
    """One Resolver's allocation being resolved; start() begins the next one."""

    def __init__(self, resolve: Resolve, cpp: Optional[Decider]):
        # Held weakly: the parts hold this, the Resolver holds the parts, and a dropped
        # Resolver (an Engine's, after its scan) frees its caches at once.
        self._resolve = weakref.WeakMethod(resolve)
        self.cpp = cpp  # definitions in branches not compiled are not used
        self.home = ""  # the file of the allocation being resolved
        self.budget = 0  # expressions it may still visit
        # While a queue's name is resolved: a local that ++ or -- changes (a loop counter) is
        # not the value of its assignments, which is all flow.Flow sees; a struct field is not
        # followed (its assignments in the tree miss what snprintf() or strscpy() wrote, and
        # searching the tree for every field a name prints would cost much for nothing).
        self.naming = False

    def start(self, home: str, budget: int) -> None:
        """The next allocation, in the file home, may visit budget expressions."""
        self.home = home
        self.budget = budget

    def resolve(self, node, scope: Scope, depth: int = 0, seen: frozenset = frozenset(),
                expand_params: bool = False) -> Value:
        resolve = self._resolve()
        assert resolve is not None, "the Resolver outlives its parts"
        return resolve(node, scope, depth, seen, expand_params)
