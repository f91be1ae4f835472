"""How a client's calls ended, counted for ingestion reports."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LLMStats:
    """What the client did, for ingestion reports: one ``call`` may take several ``attempts``.

    Each call ends one way: ``valid_first_try`` (the first answer, as it came), ``repaired`` (an
    answer usable once cut to its complete values), ``valid_after_retry`` (a later answer, as it
    came) or ``failed`` (an error raised) — the four add up to ``calls``."""

    calls: int = 0
    attempts: int = 0
    retries: int = 0
    malformed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    valid_first_try: int = 0
    repaired: int = 0
    valid_after_retry: int = 0
    failed: int = 0
