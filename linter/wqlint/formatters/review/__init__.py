"""Output formats of `wqlint review`: one small module each, all with the same signature.

format(review, catalogue) -> str, where review is a wqlint.review.Review. They are kept apart
from FORMATS because a review is more than a scan Report: which added line each finding is
blamed on, the patch mail it answers, the findings the series fixes.
"""
from wqlint.formatters.review import b4, b4_review, github, json_format, mail, patchwork, rdjson, sarif, text

REVIEW_FORMATS = {"text": text.format, "mail": mail.format, "github": github.format,
                  "rdjson": rdjson.format, "sarif": sarif.format, "b4": b4.format,
                  "patchwork": patchwork.format, "json": json_format.format,
                  "b4-review": b4_review.format}
# Formats whose reader counts every stderr line as a failure: notes are not printed.
QUIET_FORMATS = frozenset({"b4", "b4-review"})
