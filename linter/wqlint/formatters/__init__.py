"""Output formats: one small module each, all with the same signature.

format(report, catalogue) -> str
"""
from wqlint.formatters import json_format, sarif, text

FORMATS = {"text": text.format, "json": json_format.format, "sarif": sarif.format}
