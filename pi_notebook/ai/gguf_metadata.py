"""Read the key/value metadata at the head of a GGUF file (architecture, name, chat template):
what the local server needs to pick a chat template and sampling for a model file.

Only the header is read; array values (the tokenizer's vocabulary, tens of thousands of
strings) are skipped, so a large model's metadata takes a fraction of a second. The format is
llama.cpp's: ``GGUF``, a version, the tensor and key counts, then typed key/value pairs.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from pathlib import Path
from typing import BinaryIO, Final, TypeAlias

__all__ = ["GgufError", "read_gguf_metadata"]

_MAGIC: Final = b"GGUF"
_STRING: Final = 8
_ARRAY: Final = 9
_SCALARS: Final[dict[int, str]] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_MAX_STRING: Final = 1 << 24
"""No key or string value of a real model comes near this; a larger length is a damaged file."""

GgufValue: TypeAlias = str | int | float | bool | None


class GgufError(ValueError):
    """The file is not a GGUF model, or its header is damaged."""


def read_gguf_metadata(
    path: str | Path, keys: Collection[str] | None = None
) -> dict[str, GgufValue]:
    """The scalar and string metadata of the GGUF file at ``path`` (only ``keys`` when given);
    array values are skipped (reported as ``None``). Stops reading once every wanted key is
    found."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            return _read(file, set(keys) if keys is not None else None)
    except (struct.error, UnicodeDecodeError) as exc:
        raise GgufError(f"{path}: damaged GGUF header ({exc})") from None


def _read(file: BinaryIO, wanted: set[str] | None) -> dict[str, GgufValue]:
    if file.read(4) != _MAGIC:
        raise GgufError(f"{getattr(file, 'name', 'file')}: not a GGUF model file")
    (version,) = struct.unpack("<I", file.read(4))
    if version < 2:
        raise GgufError(f"GGUF version {version} is too old (llama.cpp reads 2 and later)")
    _tensors, count = struct.unpack("<QQ", file.read(16))
    found: dict[str, GgufValue] = {}
    for _ in range(count):
        key = _string(file)
        (kind,) = struct.unpack("<I", file.read(4))
        if wanted is not None and key not in wanted:
            _skip(file, kind)
            continue
        found[key] = _value(file, kind)
        if wanted is not None and len(found) == len(wanted):
            break
    return found


def _string(file: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", file.read(8))
    if length > _MAX_STRING:
        raise GgufError(f"a string of {length} bytes in the header")
    data = file.read(length)
    if len(data) != length:
        raise GgufError("the header ends inside a string")
    return data.decode("utf-8")


def _value(file: BinaryIO, kind: int) -> GgufValue:
    if kind == _STRING:
        return _string(file)
    if kind == _ARRAY:
        _skip(file, kind)
        return None
    fmt = _SCALARS.get(kind)
    if fmt is None:
        raise GgufError(f"unknown value type {kind}")
    value: int | float | bool = struct.unpack(fmt, file.read(struct.calcsize(fmt)))[0]
    return value


def _skip(file: BinaryIO, kind: int) -> None:
    if kind == _STRING:
        (length,) = struct.unpack("<Q", file.read(8))
        file.seek(length, 1)
    elif kind == _ARRAY:
        item, count = struct.unpack("<IQ", file.read(12))
        fmt = _SCALARS.get(item)
        if fmt is not None:
            file.seek(struct.calcsize(fmt) * count, 1)
        else:
            for _ in range(count):
                _skip(file, item)
    elif kind in _SCALARS:
        file.seek(struct.calcsize(_SCALARS[kind]), 1)
    else:
        raise GgufError(f"unknown value type {kind}")
