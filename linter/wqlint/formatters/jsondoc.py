"""The one way the JSON formats write a document: well-formed UTF-8 JSON whatever the names
in it hold."""
from __future__ import annotations

import json

from wqlint.finding import unicode_text


def dumps(doc, **options) -> str:
    """json.dumps(doc, **options) of doc with every string unicode_text(): a file name that is
    not UTF-8 would otherwise be a lone surrogate, an escape (\\udcff) that strict JSON
    readers refuse."""
    return json.dumps(_unicode(doc), **options)


def _unicode(value):
    if isinstance(value, str):
        return unicode_text(value)
    if isinstance(value, dict):
        return {unicode_text(k) if isinstance(k, str) else k: _unicode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unicode(v) for v in value]
    return value
