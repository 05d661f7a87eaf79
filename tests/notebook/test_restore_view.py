"""The restore card's kernel half: ``CardSlot`` (ask, answer, time out, replace), the card on
the session tree and the ``%fork --restore`` widget, answered the way a front end answers
(a comm message, possibly on another thread). The front end is in ``js/test/
restore_card.test.js``, the whole path in ``tests/browser/test_restore_browser.py``."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from pi_notebook.ai.types import UserMessage
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.notebook.widgets.protocol import RestoreCard
from pi_notebook.notebook.widgets.restore_view import CardSlot, RestoreView, card_text
from pi_notebook.notebook.widgets.tree_view import TreeView

from .test_run_view import click, settle


def card(card_id: str = "restore-1") -> RestoreCard:
    return cast(
        RestoreCard,
        {
            "id": card_id,
            "target_id": "e1",
            "title": "Restore to “start”",
            "checkpoint": "checkpoint #1 at entry e1",
            "refusal": "",
            "variables": [{"name": "df", "change": "restored", "type": "DataFrame", "note": ""}],
            "cells": [{"label": "In [2]", "source": "f = open('x')", "names": ["f"]}],
            "document": [],
            "state": "pending",
            "result": "",
        },
    )


async def test_a_card_waits_for_its_own_answer() -> None:
    shown: list[dict[str, Any]] = []
    slot = CardSlot(lambda value: shown.append(dict(value)))
    asking = asyncio.ensure_future(slot.ask(card()))
    await settle()
    assert shown[-1]["state"] == "pending" and not asking.done()
    assert slot.answer({"type": "restore", "card_id": "restore-0", "allow": True}) is not None
    assert not asking.done()  # a stale card's answer is not this card's
    assert slot.answer({"type": "restore", "card_id": "restore-1", "allow": True}) is None
    reply = await asking
    assert reply == {
        "type": "restore",
        "card_id": "restore-1",
        "allow": True,
        "revert_document": True,
    }
    assert shown[-1]["state"] == "allowed"
    assert "already answered" in (slot.answer({"card_id": "restore-1", "allow": False}) or "")
    slot.finish("done", "Variables restored: df.")
    assert shown[-1]["state"] == "done" and shown[-1]["result"] == "Variables restored: df."


async def test_no_answer_in_time_or_a_newer_card_changes_nothing() -> None:
    shown: list[dict[str, Any]] = []
    slot = CardSlot(lambda value: shown.append(dict(value)))
    assert await slot.ask(card(), timeout=0.05) is None
    assert shown[-1]["state"] == "denied" and "No answer within" in shown[-1]["result"]
    first = asyncio.ensure_future(slot.ask(card("restore-2")))
    await settle()
    second = asyncio.ensure_future(slot.ask(card("restore-3")))
    assert await first is None
    await settle()
    slot.answer({"card_id": "restore-3", "allow": False, "revert_document": False})
    assert (await second) == {
        "type": "restore",
        "card_id": "restore-3",
        "allow": False,
        "revert_document": False,
    }


async def test_the_tree_and_the_fork_widget_take_the_answer_from_their_front_end() -> None:
    session = Session.create(InMemorySessionStorage())
    session.append_message(UserMessage(content="hello"))
    tree = TreeView(session)
    asking = asyncio.ensure_future(tree.restore_slot.ask(card()))
    await settle(tree)
    assert tree.restore["id"] == "restore-1" and tree.restore["state"] == "pending"
    click(tree, {"type": "restore", "card_id": "restore-1", "allow": True})
    await settle(tree)
    assert (await asking) is not None and tree.restore["state"] == "allowed"
    click(tree, {"type": "restore", "card_id": "restore-1", "allow": True})
    await settle(tree)
    assert "already answered" in tree.notice

    view = RestoreView()
    assert "nothing to show yet" in view._fallbacks()[0]
    asking = asyncio.ensure_future(view.slot.ask(card("restore-9")))
    await settle(view)
    click(view, {"type": "restore", "card_id": "restore-9", "allow": False})
    await settle(view)
    reply = await asking
    assert reply is not None and not reply["allow"]
    view.slot.finish("denied", "Restore denied.")
    text = view._fallbacks()[0]
    assert "restored: df (DataFrame)" in text and "run again In [2] for f" in text
    assert "[denied] Restore denied." in text
    assert card_text({}) == "Restore: nothing to show yet."


async def test_the_trees_card_is_answered_no_when_a_run_starts_first() -> None:
    from pi_notebook.notebook.restore.offer import deny_when_a_run_starts

    shown: list[dict[str, Any]] = []
    slot = CardSlot(lambda value: shown.append(dict(value)))
    runs: list[object] = []
    watch = asyncio.ensure_future(deny_when_a_run_starts(slot, runs))
    asking = asyncio.ensure_future(slot.ask(card()))
    await asyncio.sleep(0.3)
    assert not asking.done()
    runs.append(object())  # what start_run does when an %%agent cell runs
    assert await asyncio.wait_for(asking, 2) is None
    await watch
    assert shown[-1]["state"] == "denied" and "run started" in shown[-1]["result"]
