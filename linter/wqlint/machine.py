"""The machine wqlint's messages describe unless told otherwise (--cpus, --max-cpus): its CPU
count, and the largest machine a limit of max_active is judged for."""

NCPUS = 96
MAX_CPUS = 512
