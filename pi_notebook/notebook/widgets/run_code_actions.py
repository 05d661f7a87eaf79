"""The run view's code actions: "Insert as cell" and "Apply as edit" on the runnable code blocks
of its replies. The page shows the buttons the view offers; a click is acted on only when the
view offers that action and the code is a block of one of its replies (a page cannot make the
kernel insert or apply code of its own)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .protocol import TranscriptItem

__all__ = ["CodeActionRefused", "CodeActions"]


class CodeActionRefused(ValueError):
    """A click the view does not act on; its text says why, for the view's notice."""


class CodeActions:
    """Which actions are offered: ``insert`` (a notebook frontend is connected) and
    ``edit_target``, the cell "Apply as edit" changes (``""``: none)."""

    def __init__(self) -> None:
        self.insert = False
        self.edit_target = ""

    def offer(self, *, insert: bool, edit_target: str = "") -> bool:
        """Set what is offered; True when that changed."""
        if (insert, edit_target) == (self.insert, self.edit_target):
            return False
        self.insert, self.edit_target = insert, edit_target
        return True

    def controls(self, enabled: bool) -> tuple[bool, str]:
        """The ``insert_code`` and ``edit_code`` controls (``enabled``: the owner handles
        code actions)."""
        return enabled and self.insert, self.edit_target if enabled else ""

    def check(
        self, message: Mapping[str, Any], items: Sequence[TranscriptItem], *, enabled: bool
    ) -> tuple[str, str, str]:
        """A ``code_action`` request checked against what is offered and the replies in
        ``items``: its button label, action and code; :class:`CodeActionRefused` otherwise."""
        from ..workspace.code_actions import code_blocks

        action, source = message.get("action"), message.get("source")
        insert, edit = self.controls(enabled)
        offered = {"insert": insert, "edit": bool(edit)}
        if not isinstance(source, str) or not offered.get(str(action)):
            raise CodeActionRefused("Ignored a code action this view does not offer.")
        item = next((i for i in items if i["id"] == message.get("item_id")), None)
        blocks = [] if item is None or item["kind"] != "assistant" else item["blocks"]
        text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        if not any(block.rstrip() == source.rstrip() for block in code_blocks(text)):
            raise CodeActionRefused(
                "Ignored a code action: that code is not a block of this run's replies."
            )
        label = "Insert as cell" if action == "insert" else "Apply as edit"
        return label, str(action), source.rstrip()
