"""The run view's parts, each alone: the transcript and its patch ops, the tool cards, the
approvals and reviews, the header, the code actions check, the static text, and the feed that
turns real agent events into all of them (no widget, no comm)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from pi_notebook.agent.events import AgentEndEvent, AgentStartEvent, MessageEndEvent
from pi_notebook.ai import ToolCall, UserMessage, faux_assistant_message
from pi_notebook.ai.events import TextDeltaEvent, TextEndEvent, TextStartEvent, ToolCallEndEvent
from pi_notebook.notebook.widgets.items import (
    RESULT_PREVIEW_CHARS,
    assistant_item,
    message_json,
    user_item,
)
from pi_notebook.notebook.widgets.protocol import ApprovalPreview, RunStatus, ToolApproval
from pi_notebook.notebook.widgets.run_approvals import Approvals
from pi_notebook.notebook.widgets.run_code_actions import CodeActionRefused, CodeActions
from pi_notebook.notebook.widgets.run_feed import RunFeed
from pi_notebook.notebook.widgets.run_header import (
    HeaderState,
    budget_rows,
    compaction_ended,
    compaction_started,
)
from pi_notebook.notebook.widgets.run_static import run_html, run_text
from pi_notebook.notebook.widgets.run_transcript import Transcript, block_edits
from pi_notebook.notebook.widgets.tool_cards import ToolCards
from tests.notebook.test_coalesce import FakeClock


class Marks:
    """Records the traits a part says changed."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, *names: str) -> None:
        self.names.extend(names)


def approval(cards: ToolCards, tool_call_id: str) -> ToolApproval:
    found = cards.running[tool_call_id]["approval"]
    assert found is not None
    return found


def preview(always: bool = False) -> ApprovalPreview:
    return {
        "title": "Insert a cell",
        "language": "python",
        "source": "1",
        "diff": "",
        "always": always,
    }


# --- the transcript -------------------------------------------------------------------------------


def test_a_streamed_reply_is_sent_whole_once_then_as_added_text_then_promoted() -> None:
    transcript = Transcript()
    transcript.append(user_item(message_json(UserMessage(content="hi", timestamp=0)), "u1"))
    transcript.start_reply()
    transcript.update_reply(TextStartEvent(content_index=0))
    transcript.update_reply(TextDeltaEvent(content_index=0, delta="Hel"))
    first = transcript.ops("faux/faux-1")
    assert first[0][0] == "push" and first[0][1] == 0 and len(first[0][2]) == 1
    assert first[1][0] == "current"
    current: Any = first[1][1]
    assert (
        current["blocks"] == [{"type": "text", "text": "Hel"}] and current["model"] == "faux/faux-1"
    )

    transcript.update_reply(TextDeltaEvent(content_index=0, delta="lo"))
    assert transcript.ops("faux/faux-1") == [("blocks", current["id"], [(0, 3, "lo", None)])]
    assert transcript.ops("faux/faux-1") == []  # nothing new: no op

    transcript.update_reply(TextEndEvent(content_index=0, content="Hello"))
    item_id = transcript.end_reply()
    assert item_id == current["id"] and transcript.live_id is None
    reply = assistant_item(message_json(faux_assistant_message("Hello")), item_id)
    transcript.append(reply)
    ops = transcript.ops("faux/faux-1")
    # the page has the text already: the reply is promoted in place, its blocks not resent
    assert [op[0] for op in ops] == ["promote"]
    assert ops[0][1] == 1 and "blocks" not in ops[0][2]
    assert transcript.find(item_id) is reply


def test_a_tool_call_block_carries_its_arguments_and_a_shrunk_reply_is_resent() -> None:
    transcript = Transcript()
    transcript.update_reply(TextDeltaEvent(content_index=0, delta="x"))  # no start: one is made
    assert transcript.live_id is not None
    call = ToolCall(id="c1", name="ls", arguments={"path": "."})
    transcript.update_reply(ToolCallEndEvent(content_index=1, tool_call=call))
    current = transcript.current("m")
    assert current is not None
    assert current["blocks"][1] == {
        "type": "toolCall",
        "id": "c1",
        "name": "ls",
        "args": '{\n  "path": "."\n}',
        "complete": True,
    }
    meta: dict[str, Any] = {"type": "text"}
    assert block_edits([(meta, "ab"), (meta, "c")], [(meta, "ab")]) is None
    assert block_edits([(meta, "ab")], [(meta, "xy")]) == [(0, 0, "xy", None)]


# --- tool cards and approvals ---------------------------------------------------------------------


def test_a_card_becomes_a_result_item_with_its_duration_approval_and_whole_text() -> None:
    clock, marks = FakeClock(), Marks()
    cards = ToolCards(clock, marks)
    cards.previews["c1"] = preview()
    cards.open("c1", "run", {"code": "1"})
    cards.set_approval("c1", "allowed", 5.0, "ok")
    assert cards.timeout("c1") == 5.0 and marks.names == ["running_tools", "status"]
    clock.now = 0.25
    text = "y" * (RESULT_PREVIEW_CHARS + 10)
    item = cards.finish("m9", "c1", "run", [{"type": "text", "text": text}], None, False)
    assert item["id"] == "m9" and item["duration_ms"] == 250
    assert item["approval"] is not None and item["approval"]["reason"] == "ok"
    assert item["approval"]["preview"] == preview()
    assert cards.running == {} and "c1" in cards.finished
    assert cards.full_result("c1") == text and len(item["text"]) == RESULT_PREVIEW_CHARS
    cards.set_approval("c1", "denied", None)  # a finished card: nothing to change
    assert cards.running == {}


async def test_an_approval_is_answered_by_a_click_or_times_out() -> None:
    marks = Marks()
    cards = ToolCards(FakeClock(), marks)
    approvals = Approvals(cards, marks)
    asking = asyncio.ensure_future(approvals.request("c1", "run", {}, None, preview(always=True)))
    await asyncio.sleep(0)
    assert bool(approvals.pending) and approval(cards, "c1")["state"] == "pending"
    with pytest.raises(RuntimeError, match="already pending"):
        await approvals.request("c1", "run", {})
    approvals.answer("c1", True, always=True)
    assert await asking is True and approvals.answered_always("c1") and not approvals.pending
    assert approval(cards, "c1")["reason"] == "Always allowed for this session."

    assert await approvals.request("c2", "run", {}, timeout=0.01) is None
    assert approval(cards, "c2")["state"] == "timed_out"
    with pytest.raises(ValueError, match="timeout"):
        await approvals.request("c3", "run", {}, timeout=0)


async def test_a_review_is_decided_change_by_change_and_a_stop_rejects_the_rest() -> None:
    marks = Marks()
    cards = ToolCards(FakeClock(), marks)
    approvals = Approvals(cards, marks)
    changes: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]] = [
        ("a", "edit", {}, preview()),
        ("b", "edit", {}, preview()),
    ]
    asking = asyncio.ensure_future(approvals.request_review(changes))
    await asyncio.sleep(0)
    review = approvals.review
    assert review is not None and review["id"] == "review-1"
    approvals.decide("review-0", True, None)  # an older card: ignored
    approvals.decide("review-1", True, "a")
    approvals.decide("review-1", False, "b")
    assert await asking == {"a": True, "b": False} and approvals.review is None
    assert approval(cards, "a")["state"] == "allowed"
    assert "1 accepted" in approval(cards, "b")["reason"]

    asking = asyncio.ensure_future(approvals.request_review(changes[:1]))
    await asyncio.sleep(0)
    approvals.settle(False, "The run was stopped.")
    assert await asking == {"a": False}
    assert approval(cards, "a")["state"] == "denied"


# --- header, code actions, static text ------------------------------------------------------------


def test_the_header_counts_usage_and_shows_budget_and_compaction() -> None:
    head = HeaderState(None, "low")
    reply = assistant_item(message_json(faux_assistant_message("hi")), "m1")
    head.add_reply(reply)
    assert head.model == reply["model"] and head.as_dict()["thinking_level"] == "low"
    event = SimpleNamespace(
        run_caps={"maxCost": 0.2, "maxTurns": 15},
        run_spent={"cost": 0.01, "tokens": 10, "turns": 3},
        session_caps={"maxTokens": 1000},
        session_spent={"cost": 0.0, "tokens": 500, "turns": 9},
    )
    assert [(r["scope"], r["kind"], r["cap"]) for r in budget_rows(event)] == [
        ("run", "cost", 0.2),
        ("run", "turns", 15),
        ("session", "tokens", 1000),
    ]
    assert (
        compaction_started(SimpleNamespace(tokens_before=12000)) == "compacting: 12,000 tokens → …"
    )
    done = SimpleNamespace(
        result=SimpleNamespace(tokens_before=12000),
        tokens_after=800,
        error_message=None,
        aborted=False,
    )
    assert compaction_ended(done) == ("compacted: 12,000 → 800 tokens", 800)
    head.compaction_end(done)
    assert head.context_tokens == 800
    failed = SimpleNamespace(result=None, tokens_after=None, error_message="boom", aborted=False)
    assert compaction_ended(failed) == ("compaction failed", None)


def test_a_code_action_is_checked_against_what_is_offered_and_the_replies() -> None:
    actions = CodeActions()
    reply = assistant_item(
        message_json(faux_assistant_message("Run:\n```python\nprint(1)\n```")), "m1"
    )
    click = {"action": "insert", "source": "print(1)\n", "item_id": "m1"}
    with pytest.raises(CodeActionRefused, match="does not offer"):
        actions.check(click, [reply], enabled=True)
    assert actions.offer(insert=True) and not actions.offer(insert=True)
    assert actions.controls(False) == (False, "") and actions.controls(True) == (True, "")
    assert actions.check(click, [reply], enabled=True) == ("Insert as cell", "insert", "print(1)")
    with pytest.raises(CodeActionRefused, match="not a block"):
        actions.check({**click, "source": "import os"}, [reply], enabled=True)
    with pytest.raises(CodeActionRefused, match="not a block"):
        actions.check({**click, "item_id": "m2"}, [reply], enabled=True)


def test_the_static_text_says_how_the_run_stands() -> None:
    reply = assistant_item(message_json(faux_assistant_message("Hello <b>")), "m1")
    usage = reply["usage"]
    assert usage is not None
    common: dict[str, Any] = dict(model="faux/faux-1", usage=usage, budget=[], live=None, notice="")
    text = run_text(status="done", stalled_ms=0, items=[reply], error="", **common)
    assert text.splitlines()[0].startswith("pi run · done · faux/faux-1 · ")
    assert text.splitlines()[1] == "assistant: Hello <b>"
    stalled = run_text(status="waiting", stalled_ms=4200, items=[], error="x", **common)
    assert stalled.splitlines()[0].startswith("pi run · waiting for the model — 4 s")
    assert stalled.splitlines()[-1] == "! x"
    page = run_html("head", [reply], "")
    assert "Hello &lt;b&gt;" in page and "<script" not in page


# --- the feed -------------------------------------------------------------------------------------


def test_the_feed_turns_real_events_into_items_and_ends_the_run() -> None:
    marks = Marks()
    ended: list[RunStatus] = []
    started: list[bool] = []
    feed = RunFeed(
        model=None,
        thinking_level="off",
        clock=FakeClock(),
        mark=marks,
        started=lambda: started.append(True),
        ended=ended.append,
        stopped=lambda reason: None,
    )
    prompt = UserMessage(content="hi", timestamp=0)
    reply = faux_assistant_message("hello")
    feed.handle(AgentStartEvent())
    assert started == [True] and feed.status() == "waiting"
    feed.handle(MessageEndEvent(message=prompt))
    feed.handle(MessageEndEvent(message=reply))
    feed.handle(SimpleNamespace(type="session_saved"))  # not an agent event: ignored
    feed.handle(AgentEndEvent(messages=[prompt, reply]))
    assert ended == ["done"]
    assert [(i["kind"], i.get("origin")) for i in feed.transcript.items] == [
        ("user", "prompt"),
        ("assistant", None),
    ]
    assert feed.version == 2 and "messages" in marks.names and "header" in marks.names
    feed.end("done")
    assert feed.status() == "done" and feed.version == 3
