"""Session files of versions 1 and 2 brought to version 3 in memory, as pi-coding-agent does.

v1 → v2: ids and a linear ``parentId`` chain are added; a compaction's ``firstKeptEntryIndex``
(an index into the file's records, header = 0) becomes ``firstKeptEntryId``. v2 → v3: message
role ``hookMessage`` becomes ``custom``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic_core import from_json

from .entries import new_id

__all__ = ["migrated_records"]


def migrated_records(
    lines: Sequence[bytes], first: int, version: int, reject: Callable[[int, str], None]
) -> list[tuple[int, dict[str, Any]]]:
    """The entry lines of a v1/v2 file (its header is line ``first``, from 0) as v3 entry dicts,
    each with its line's index; ``reject`` hears a line that is no JSON object (its number, why).
    """
    records: list[tuple[int, dict[str, Any]]] = []
    for index in range(first + 1, len(lines)):
        if not lines[index].strip():
            continue
        try:
            data = from_json(lines[index])
        except ValueError as exc:
            reject(index + 1, f"not valid JSON ({exc})")
            continue
        if not isinstance(data, dict):
            reject(index + 1, "not a JSON object")
            continue
        records.append((index, data))
    if version < 2:
        previous: str | None = None
        for _, data in records:
            data["id"] = new_id()
            data["parentId"] = previous
            previous = data["id"]
        for _, data in records:
            kept = data.pop("firstKeptEntryIndex", None)
            if data.get("type") != "compaction" or not isinstance(kept, int):
                continue
            if 1 <= kept <= len(records):  # an index into the file's records, header = 0
                data["firstKeptEntryId"] = records[kept - 1][1]["id"]
    for _, data in records:
        message = data.get("message")
        if isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
    return records
