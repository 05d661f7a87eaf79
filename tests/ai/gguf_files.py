"""Write small GGUF files (a header only, no tensors) for tests of metadata reading."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from pathlib import Path


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, metadata: Mapping[str, str | int | float | Sequence[str]]) -> Path:
    """A GGUF v3 header with ``metadata``: strings, u32 integers, f32 floats and string arrays
    (a vocabulary, which a reader has to skip)."""
    parts = [b"GGUF", struct.pack("<IQQ", 3, 0, len(metadata))]
    for key, value in metadata.items():
        parts.append(_string(key))
        if isinstance(value, str):
            parts.append(struct.pack("<I", 8) + _string(value))
        elif isinstance(value, int):
            parts.append(struct.pack("<II", 4, value))
        elif isinstance(value, float):
            parts.append(struct.pack("<If", 6, value))
        else:
            parts.append(struct.pack("<IIQ", 9, 8, len(value)))
            parts.extend(_string(item) for item in value)
    path.write_bytes(b"".join(parts))
    return path
