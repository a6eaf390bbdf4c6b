"""The one error of `wqlint check`: printed as one line, and the checker exits non-zero."""


class CheckError(Exception):
    pass
