"""The names of the workqueue API that `wqlint check` needs, as a preprocessed unit shows them,
from wqlint.api."""
from __future__ import annotations

from wqlint import api

# The functions that create a queue, as they are called once every macro is expanded
# (alloc_workqueue_noprof() on v6.17+, fda6add92438): name -> (flags index, max_active index).
FUNCTIONS = api.SINKS
# The names a caller writes for those functions, macros over their _noprof form or not: a
# macro on the way to one of these that is not one of them is a wrapper.
ENTRY_POINTS = frozenset(FUNCTIONS)
# CPU counts: what they expand to depends on the configuration (NR_CPUS > 1, ...), not what
# they mean for the rules.
CPU_COUNTS = frozenset(api.CPU_COUNT_ALL)
