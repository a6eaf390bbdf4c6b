"""The one error of `wqlint check`: printed as one line, and the checker exits non-zero."""
from wqlint import errors


class CheckError(errors.WqlintError):
    pass
