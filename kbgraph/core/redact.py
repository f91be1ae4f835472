"""URIs as they may be shown: without the credentials people put in them.

``bolt://neo4j:secret@host:7687`` or an OpenAI-compatible base URL carrying ``?api_key=…`` end up in
error messages, logs and terminal scrollback; only the parts that locate the server are kept.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_SECRET_KEYS = re.compile(r"(?i)(key|token|secret|password|passwd|pwd|auth|sig|signature|credential)")


def redact_uri(uri: str) -> str:
    """``uri`` with any user:password and secret-looking query values replaced by ``***``."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparseable URI>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(
        f"{name}=***" if _SECRET_KEYS.search(name) else pair
        for pair in parts.query.split("&") if pair
        for name in [pair.split("=", 1)[0]]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
