"""The run view's transcript as the page has it: the finished items, the reply being streamed
(its text kept as chunks, joined at sync time), and the patch ops that bring the page up to date.

A patch is append-only: items added since the last one are pushed, and a reply the page showed in
progress is promoted in place, sending only the text its blocks gained (``blocks`` ops), never the
reply again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ...ai.events import BLOCK_EVENT_TYPES, DELTA_EVENT_TYPES
from .items import args_text
from .protocol import AssistantItem, Block, BlockEdit, PatchOp, TranscriptItem

__all__ = ["Transcript", "block_edits"]


@dataclass(slots=True)
class _LiveBlock:
    """One content block of the reply being streamed: text kept as chunks, joined at sync time."""

    type: str
    parts: list[str] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""
    complete: bool = False

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def block(self) -> Block:
        if self.type == "toolCall":
            return {
                "type": "toolCall",
                "id": self.tool_call_id,
                "name": self.name,
                "args": self.text(),
                "complete": self.complete,
            }
        if self.type == "thinking":
            return {"type": "thinking", "text": self.text(), "redacted": False}
        return {"type": "text", "text": self.text()}


_BLOCK_TYPES = {
    kind: {"text": "text", "thinking": "thinking", "toolcall": "toolCall"}[kind.split("_")[0]]
    for kind in BLOCK_EVENT_TYPES
}
"""The content-block type each block event is about (``text_delta`` → ``text``)."""

_Shown: TypeAlias = tuple[dict[str, Any], str]
"""A block of ``current`` as the front end has it: its other keys, and its text (or args)."""


def _text_key(block: Mapping[str, Any]) -> str:
    return "args" if block.get("type") == "toolCall" else "text"


def _shown(blocks: list[Block]) -> list[_Shown]:
    out: list[_Shown] = []
    for block in blocks:
        key = _text_key(block)
        out.append(({k: v for k, v in block.items() if k != key}, str(block.get(key, ""))))
    return out


def block_edits(before: list[_Shown], after: list[_Shown]) -> list[BlockEdit] | None:
    """The edits that turn the blocks ``before`` into ``after`` (``None``: blocks went away,
    send ``current`` whole). A block whose text grew sends only what was added."""
    if len(after) < len(before):
        return None
    edits: list[BlockEdit] = []
    for position, (meta, text) in enumerate(after):
        if position < len(before):
            old_meta, old_text = before[position]
            if meta == old_meta and text == old_text:
                continue
            at = len(old_text) if text.startswith(old_text) else 0
            edits.append((position, at, text[at:], None if meta == old_meta else meta))
        else:
            edits.append((position, 0, text, meta))
    return edits


@dataclass(slots=True)
class _Sent:
    """The reply in progress as the front end has it (after the patches sent so far)."""

    id: str
    blocks: list[_Shown]


class Transcript:
    """The finished items, the reply in progress, and what the page has of both."""

    def __init__(self) -> None:
        self.items: list[TranscriptItem] = []
        self.live_id: str | None = None
        """The id of the reply being streamed, None between replies."""
        self._live: dict[int, _LiveBlock] = {}
        self._next_id = 0
        self._finished: list[TranscriptItem] = []
        """Items added since the last patch (replies among them are promoted, not resent)."""
        self._sent: _Sent | None = None
        self._sent_items = 0

    def new_id(self) -> str:
        self._next_id += 1
        return f"m{self._next_id}"

    def append(self, item: TranscriptItem) -> None:
        self.items.append(item)
        self._finished.append(item)

    def find(self, item_id: object) -> TranscriptItem | None:
        return next((item for item in self.items if item["id"] == item_id), None)

    # --- the reply in progress -------------------------------------------------------------------

    def start_reply(self) -> None:
        self.live_id = self.new_id()
        self._live = {}

    def update_reply(self, delta: Any) -> None:
        """Take one streaming event of the reply (``AssistantMessageEvent``; ``start``,
        ``done`` and ``error`` are the caller's to skip)."""
        kind = delta.type
        if self.live_id is None:  # an update without message_start: start one anyway
            self.live_id = self.new_id()
        index: int = delta.content_index
        block = self._live.get(index)
        if kind in DELTA_EVENT_TYPES:
            if block is None:
                block = self._live[index] = _LiveBlock(_BLOCK_TYPES[kind])
            block.parts.append(delta.delta)
        elif kind in ("text_start", "thinking_start"):
            self._live[index] = _LiveBlock(_BLOCK_TYPES[kind])
        elif kind == "toolcall_start":
            content = delta.partial.content  # once per call: cheap enough to materialise
            call = content[index] if index < len(content) else None
            self._live[index] = _LiveBlock(
                "toolCall",
                tool_call_id=getattr(call, "id", ""),
                name=getattr(call, "name", ""),
            )
        elif kind in ("text_end", "thinking_end"):
            self._live[index] = _LiveBlock(_BLOCK_TYPES[kind], [delta.content], complete=True)
        elif kind == "toolcall_end":
            call = delta.tool_call
            self._live[index] = _LiveBlock(
                "toolCall", [args_text(call.arguments)], call.id, call.name, complete=True
            )

    def end_reply(self) -> str:
        """Drop the reply in progress; the id its finished item takes."""
        item_id = self.live_id or self.new_id()
        self.drop_reply()
        return item_id

    def drop_reply(self) -> None:
        self.live_id = None
        self._live = {}

    def current(self, model: str) -> AssistantItem | None:
        """The reply in progress as an item (``model`` names who writes it)."""
        if self.live_id is None:
            return None
        return {
            "kind": "assistant",
            "id": self.live_id,
            "blocks": [self._live[index].block() for index in sorted(self._live)],
            "stop_reason": None,
            "error_message": None,
            "model": model,
            "usage": None,
        }

    # --- patches ---------------------------------------------------------------------------------

    def ops(self, model: str) -> list[PatchOp]:
        """Ops for the items added since the last patch, then for the reply in progress."""
        ops: list[PatchOp] = []
        pushed: list[TranscriptItem] = []

        def push() -> None:
            if pushed:
                ops.append(("push", self._sent_items, list(pushed)))
                self._sent_items += len(pushed)
                pushed.clear()

        for item in self._finished:
            sent = self._sent
            if item["kind"] == "assistant" and sent is not None and sent.id == item["id"]:
                self._sent = None
                edits = block_edits(sent.blocks, _shown(item["blocks"]))
                if edits is not None:
                    push()
                    if edits:
                        ops.append(("blocks", item["id"], edits))
                    fields = {k: v for k, v in item.items() if k != "blocks"}
                    ops.append(("promote", self._sent_items, fields))
                    self._sent_items += 1
                    continue
                ops.append(("current", {}))
            pushed.append(item)
        push()
        self._finished.clear()
        current = self.current(model)
        sent = self._sent
        if current is None:
            if sent is not None:
                ops.append(("current", {}))
                self._sent = None
            return ops
        blocks = _shown(current["blocks"])
        same = sent is not None and sent.id == current["id"]
        edits = block_edits(sent.blocks, blocks) if sent is not None and same else None
        if edits is None:
            ops.append(("current", current))
        elif edits:
            ops.append(("blocks", current["id"], edits))
        self._sent = _Sent(current["id"], blocks)
        return ops
