"""Entry ids and timestamps as pi writes them, and the session file format version.

Plain standard library, so a new session file can be started (``session_file``) without the
pydantic models of the entries (``entries`` re-exports all of these).
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

__all__ = ["SESSION_VERSION", "iso_now", "iso_to_ms", "new_id"]

SESSION_VERSION = 3
"""The JSONL format version written (pi-coding-agent 0.73 and the 0.74–0.80 harness)."""


def new_id() -> str:
    """A fresh UUIDv7 string (time-ordered; 74 random bits, so no collision check is needed)."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (
        (ms & 0xFFFF_FFFF_FFFF) << 80
        | 0x7 << 76
        | (rand >> 68) << 64
        | 0b10 << 62
        | rand & ((1 << 62) - 1)
    )
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def iso_now() -> str:
    """Now as pi writes entry timestamps (``new Date().toISOString()``): ms precision, ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def iso_to_ms(timestamp: str) -> int:
    """Epoch milliseconds of an ISO timestamp (naive ones taken as UTC); ``ValueError`` if bad."""
    moment = datetime.fromisoformat(timestamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MS
