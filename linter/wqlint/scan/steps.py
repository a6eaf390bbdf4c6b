"""The budget of a path through the work model's calls (scan.calls.distance(), scan.work):
which steps out of a subsystem it may still take and, after one, how many calls it may
still make."""
from __future__ import annotations

from typing import Optional

# The steps out of a subsystem a path may take, once each (distance()): WIDE, a call of a
# function another subsystem defines; TABLE, a call through a table of several functions.
# After one, the path may make only so many more calls: which function of a table runs
# depends on the object, which the path does not show (only a wait that close is taken as
# the table's), and another subsystem's function is read for the step it takes, not as a
# way into everything it may call. A budget is the steps left and, after one, the calls left.
WIDE, TABLE = 1, 2
ALL_STEPS = WIDE | TABLE
WIDE_REACH = 3  # calls after a step into another subsystem's function
TABLE_REACH = 0  # calls after a call through a table: the function it sets must wait itself


def budget_of(steps: int, left: Optional[int] = None) -> int:
    """A budget: the steps out of a subsystem left (WIDE | TABLE) and the calls left (None:
    not counted)."""
    return steps | ((0 if left is None else left + 1) << 2)


def calls_left(budget: int) -> Optional[int]:
    n = budget >> 2
    return None if n == 0 else n - 1


def exhausted(budget: int) -> bool:
    """May a function reached with budget call no other (only its own wait counts)?"""
    return calls_left(budget) == 0


def after(budget: int) -> int:
    """The budget left to a callee called by name from a function with budget."""
    left = calls_left(budget)
    return budget if left is None else budget_of(budget & ALL_STEPS, max(left - 1, 0))


def step_out(budget: int, step: int) -> int:
    """The budget left to a callee reached by step (WIDE or TABLE) from a function with budget:
    no step of that kind again, none into another subsystem after a table."""
    left = calls_left(budget)
    reach = WIDE_REACH if step == WIDE else TABLE_REACH
    steps = budget & ALL_STEPS & ~step & (~WIDE if step == TABLE else ALL_STEPS)
    return budget_of(steps, reach if left is None else max(min(left - 1, reach), 0))
