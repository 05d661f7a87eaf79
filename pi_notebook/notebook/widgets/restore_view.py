"""The restore card: what a move in the session tree would restore, approved as one.

:class:`CardSlot` holds one widget's pending card and the future its answer resolves; the
session tree has one (the card shows in its detail pane after "Continue from here") and
:class:`RestoreView` is the widget ``%fork TARGET --restore`` shows in its cell. Both front ends
render the card with ``js/src/restore_card.js`` and answer with a ``restore`` message
(:class:`~.protocol.RestoreReply`).
"""

from __future__ import annotations

import asyncio
import html
import time
import weakref
from collections.abc import Callable
from typing import Any, cast

import traitlets

from .base import PiWidget, module_loader
from .coalesce import Coalescer
from .protocol import RestoreCard, RestoreCardState, RestoreReply

__all__ = ["CardSlot", "RestoreView", "card_text", "shown_cards"]

_shown: list[weakref.ref[RestoreView]] = []


def shown_cards() -> list[RestoreView]:
    """The ``%fork --restore`` cards made in this kernel, oldest first (for a cell that answers
    one, where nobody can click: an executed notebook)."""
    alive = [card for ref in _shown if (card := ref()) is not None]
    _shown[:] = [weakref.ref(card) for card in alive]
    return alive


class CardSlot:
    """One pending card: :meth:`ask` publishes it and waits for the answer; :meth:`answer`
    takes a front end's reply; :meth:`finish` shows what was done."""

    def __init__(self, publish: Callable[[RestoreCard | dict[str, Any]], None]) -> None:
        self._publish = publish
        self.card: RestoreCard | None = None
        self._waiting: asyncio.Future[RestoreReply | None] | None = None

    async def ask(self, card: RestoreCard, timeout: float | None = None) -> RestoreReply | None:
        """Show ``card`` and wait for the answer (None: no answer within ``timeout``, or the
        card was replaced), which leaves everything as it is."""
        self.cancel()
        self.card = card
        self._publish(dict(card))
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[RestoreReply | None] = loop.create_future()
        self._waiting = waiting
        try:
            return await asyncio.wait_for(asyncio.shield(waiting), timeout)
        except TimeoutError:
            self.finish("denied", f"No answer within {timeout or 0:.0f} s: nothing was changed.")
            return None
        finally:
            if self._waiting is waiting:
                self._waiting = None

    def answer(self, message: dict[str, Any]) -> str | None:
        """A front end's reply; the words of a notice when it is not for the pending card."""
        card, waiting = self.card, self._waiting
        if card is None or waiting is None or waiting.done():
            return "That restore card was already answered."
        if message.get("card_id") != card["id"]:
            return "That restore card is no longer current."
        reply: RestoreReply = {
            "type": "restore",
            "card_id": card["id"],
            "allow": message.get("allow") is True,
            "revert_document": message.get("revert_document") is not False,
        }
        self.update("allowed" if reply["allow"] else "denied", "")
        waiting.set_result(reply)
        return None

    def update(self, state: RestoreCardState, result: str) -> None:
        if self.card is not None:
            self.card = cast(RestoreCard, {**self.card, "state": state, "result": result})
            self._publish(dict(self.card))

    def finish(self, state: RestoreCardState, result: str) -> None:
        """Show what was done; a card still waiting is answered "no"."""
        if self._waiting is not None and not self._waiting.done():
            self._waiting.set_result(None)
        self.update(state, result)

    def cancel(self) -> None:
        if self._waiting is not None and not self._waiting.done():
            self.finish("denied", "Replaced by a newer restore card: nothing was changed.")


def card_text(card: RestoreCard | dict[str, Any]) -> str:
    """The card as plain text (a saved notebook without widget state shows this)."""
    if not card:
        return "Restore: nothing to show yet."
    lines = [str(card.get("title", "Restore"))]
    if card.get("refusal"):
        lines.append(str(card["refusal"]))
    kept = []
    for variable in card.get("variables", []):
        if variable["change"] == "kept":
            kept.append(variable["name"])
            continue
        note = f" — {variable['note']}" if variable.get("note") else ""
        lines.append(f"  {variable['change']}: {variable['name']} ({variable['type']}){note}")
    if kept:
        lines.append("  left as is: " + ", ".join(kept))
    for cell in card.get("cells", []):
        lines.append(f"  run again {cell['label']} for {', '.join(cell['names'])}")
    for step in card.get("document", []):
        problem = f" ({step['problem']})" if step["problem"] else ""
        lines.append(f"  notebook: {step['title']}{problem}")
    state = card.get("state", "pending")
    lines.append(f"[{state}] {card.get('result', '')}".rstrip())
    return "\n".join(lines)


class RestoreView(PiWidget):
    """The restore card of ``%fork TARGET --restore``."""

    module_name = "restore_card"
    _esm = module_loader("restore_card")
    content_traits = ("card", "notice")

    card = traitlets.Dict().tag(sync=True)

    def __init__(self, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._sync = Coalescer(lambda _names: None, interval=0.05, clock=time.monotonic)
        super().__init__()
        self.slot = CardSlot(self._show)
        self._connect(loop)
        _shown.append(weakref.ref(self))

    async def decide(self, allow: bool, *, revert_document: bool = True) -> None:
        """Answer the card as its Allow or Deny button does, once it is waiting for an answer
        (it is ready when the checkpoints have been compared)."""
        while self.card.get("state") in (None, "allowed") or not self.card.get("id"):
            await asyncio.sleep(0.05)
        if self.card.get("state") == "pending":
            answer = {"card_id": self.card["id"], "allow": allow}
            self.slot.answer({**answer, "revert_document": revert_document})

    def _show(self, card: RestoreCard | dict[str, Any]) -> None:
        self.card = dict(card)
        self._version += 1

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "restore":
            problem = self.slot.answer(message)
            if problem:
                self.notice = problem
        elif kind == "dismiss_notice":
            self.notice = ""
        else:
            self.notice = f"Ignored an unknown widget request {kind!r}."

    def _fallbacks(self) -> tuple[str, str]:
        text = card_text(self.card)
        return text, f'<pre class="pi-restore-static">{html.escape(text)}</pre>'
