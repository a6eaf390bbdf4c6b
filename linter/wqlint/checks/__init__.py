"""One module per rule: a resolved allocation site in, Findings out.

Every check has the same signature: check(site, ctx) -> list of Finding.
"""
from wqlint.checks import (
    cpu_count, legacy_create, max_active_over_limit, missing_affinity, unbound_one,
)

CHECKS = (cpu_count.check, unbound_one.check, max_active_over_limit.check,
          missing_affinity.check, legacy_create.check)
