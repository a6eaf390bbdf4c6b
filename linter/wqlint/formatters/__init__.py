"""Output formats: one small module each, all with the same signature.

format(report, catalogue) -> str

FORMATS are those of `wqlint scan --format`; sparse.format is what `wqlint check` prints.
"""
from wqlint.formatters import json_format, sarif, text

FORMATS = {"text": text.format, "json": json_format.format, "sarif": sarif.format}
