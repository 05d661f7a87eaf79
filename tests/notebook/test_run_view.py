"""The run view's Python half: state built from real agent events, throttled syncs, the
front-end requests (hopped onto the loop from other threads), approvals, text fallbacks."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from pathlib import Path
from typing import Any, cast

import pytest

import pi_notebook
from pi_notebook.agent.agent import Agent
from pi_notebook.agent.events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
)
from pi_notebook.agent.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from pi_notebook.agent.types import BeforeToolCallContext, BeforeToolCallResult
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    FauxProvider,
    TextContent,
    UserMessage,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.notebook.widgets.base import STATIC
from pi_notebook.notebook.widgets.items import RESULT_PREVIEW_CHARS
from pi_notebook.notebook.widgets.protocol import ApprovalPreview
from pi_notebook.notebook.widgets.run_view import CONTENT_TRAITS, RunView
from tests.notebook.test_coalesce import FakeClock, FakeScheduler

ROOT = Path(__file__).resolve().parents[2]


class Wire:
    """Records what a widget sends to its front end (instead of the kernel's comm)."""

    def __init__(self, widget: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        widget.comm.send = self._send

    def _send(self, data: Any = None, buffers: Any = None, **_: Any) -> None:
        self.sent.append(data)

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [m["state"] for m in self.sent if m["method"] == "update"]

    @property
    def custom(self) -> list[dict[str, Any]]:
        return [m["content"] for m in self.sent if m["method"] == "custom"]


def click(view: Any, message: dict[str, Any]) -> threading.Thread:
    """Deliver a front-end message the way ipykernel may: on another thread (a subshell)."""
    thread = threading.Thread(target=view._handle_custom_msg, args=(message, []))
    thread.start()
    thread.join()
    return thread


async def settle(view: Any = None, rounds: int = 5) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)
    if view is not None:
        view.flush()


def ls_tool(delay: float = 0.0) -> AgentTool:
    async def execute(
        call_id: str,
        params: dict[str, Any],
        signal: AbortSignal | None,
        on_update: ToolUpdateCallback,
    ) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="halfway")]))
        await asyncio.sleep(delay)
        bundle = {"text/html": "<b>a.txt</b>", "text/plain": "a.txt", "application/x-odd": "?"}
        return AgentToolResult(
            content=[TextContent(text="a.txt\nb.txt")], details={"mime_bundle": bundle}
        )

    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    return AgentTool(name="ls", description="list files", parameters=schema, execute=execute)


# --- state from a real run -----------------------------------------------------------------------


async def test_a_run_with_thinking_text_and_a_tool_ends_up_whole_in_state(
    faux: FauxProvider,
) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("Look first."),
                    faux_text("Let me look."),
                    faux_tool_call("ls", {"path": "."}, id="c1"),
                ]
            ),
            faux_assistant_message("Two files: **a.txt** and b.txt."),
        ]
    )
    model = faux.get_model()
    agent = Agent(model=model, tools=[ls_tool(delay=0.12)])
    view = RunView(model=model, thinking_level="low")
    seen_progress: list[str] = []
    view.observe(
        lambda change: seen_progress.extend(t["progress"] for t in change["new"].values()),
        names="running_tools",
    )
    agent.subscribe(view.handle)
    await agent.prompt("list files")

    assert view.status == "done" and view.error == "" and view.current == {}
    assert view.running_tools == {}
    kinds = [(item["kind"], item.get("origin")) for item in view.messages]
    assert kinds == [
        ("user", "prompt"),
        ("assistant", None),
        ("tool_result", None),
        ("assistant", None),
    ]
    prompt, first, result, last = view.messages
    assert prompt["text"] == "list files"
    assert [b["type"] for b in first["blocks"]] == ["thinking", "text", "toolCall"]
    assert first["blocks"][2] == {
        "type": "toolCall",
        "id": "c1",
        "name": "ls",
        "args": '{\n  "path": "."\n}',
        "complete": True,
    }
    assert first["stop_reason"] == "toolUse" and first["model"] == "faux/faux-1"
    assert result["tool_call_id"] == "c1" and result["text"] == "a.txt\nb.txt"
    assert result["mime_bundle"] == {"text/html": "<b>a.txt</b>", "text/plain": "a.txt"}
    assert result["duration_ms"] is not None and result["duration_ms"] >= 100
    assert last["blocks"] == [{"type": "text", "text": "Two files: **a.txt** and b.txt."}]
    assert "halfway" in seen_progress  # progress reached the front end while the tool ran

    replies = [m for m in agent.state.messages if isinstance(m, AssistantMessage)]
    header = view.header
    assert header["model"] == "faux/faux-1" and header["thinking_level"] == "low"
    assert header["usage"]["input"] == sum(r.usage.input for r in replies)
    assert header["usage"]["output"] == sum(r.usage.output for r in replies)
    assert header["context_tokens"] == replies[-1].usage.total_tokens
    assert header["context_window"] == 128_000
    json.dumps(view.get_state())  # all of it is JSON


class Page:
    """What ``js/src/run_view.js``'s ``applyPatch`` does with the patches, in Python: the page's
    copy of the model state, which must equal the kernel's traits after every patch."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = json.loads(json.dumps(state))
        self.gaps = 0

    def receive(self, message: dict[str, Any]) -> bool:
        """Apply a message from the kernel; False for a patch that does not follow on."""
        if message.get("type") != "patch":
            return True
        seq = self.state.get("patch_seq", 0)
        if message["seq"] <= seq:
            return True  # in the state already
        if message["seq"] != seq + 1:
            self.gaps += 1
            return False
        messages = list(self.state["messages"])
        current = dict(self.state["current"])
        for op in message["ops"]:
            if op[0] == "push":
                assert op[1] == len(messages)
                messages[op[1] :] = op[2]
            elif op[0] == "current":
                current = op[1]
            elif op[0] == "blocks":
                assert current.get("id") == op[1]
                blocks = list(current["blocks"])
                for position, at, text, meta in op[2]:
                    old = blocks[position] if position < len(blocks) else None
                    base = dict(meta if meta is not None else old or {})
                    key = "args" if base.get("type") == "toolCall" else "text"
                    old_text = str((old or {}).get(key, ""))
                    assert at <= len(old_text)
                    base[key] = old_text[:at] + text
                    blocks[position : position + 1] = [base]
                current = {**current, "blocks": blocks}
            elif op[0] == "promote":
                assert op[1] == len(messages)
                messages.append({**current, **op[2]})
                current = {}
        self.state.update(json.loads(json.dumps({**message["set"], "messages": messages})))
        self.state["current"] = json.loads(json.dumps(current))
        self.state["patch_seq"] = message["seq"]
        return True


def content_state(view: RunView) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(json.dumps(view.get_state(list(CONTENT_TRAITS)))))


async def test_a_10000_token_reply_arrives_complete_in_few_small_patches(
    faux: FauxProvider,
) -> None:
    reply = " ".join(f"word{i}" for i in range(10_000))
    faux.set_responses([faux_assistant_message(reply)])
    events: list[AgentEvent] = []
    agent = Agent(model=faux.get_model())
    agent.subscribe(events.append)
    await agent.prompt("write a lot")
    deltas = sum(e.type == "message_update" for e in events)
    assert deltas > 1000

    clock = FakeClock()
    scheduler = FakeScheduler(clock)
    view = RunView(clock=clock, scheduler=scheduler)
    wire = Wire(view)
    page = Page(content_state(view))
    shown: list[str] = []
    received = 0
    for event in events:  # replayed at 1 ms per event: seconds of streaming
        view.handle(event)
        scheduler.advance(0.001)
        for message in wire.sent[received:]:
            assert page.receive(message["content"])
            if page.state["current"].get("blocks"):
                shown.append(page.state["current"]["blocks"][0]["text"])
        received = len(wire.sent)
    scheduler.advance(1.0)
    for message in wire.sent[received:]:
        assert page.receive(message["content"])
    assert len(shown) > 50

    duration = len(events) * 0.001
    assert view.messages[-1]["blocks"] == [{"type": "text", "text": reply}]  # nothing dropped
    assert view.status == "done"
    assert wire.updates == []  # everything went as patches
    assert 3 <= len(wire.custom) <= duration / 0.1 + 3
    assert page.state == content_state(view)  # the page's copy is the whole state
    assert all(reply.startswith(text) for text in shown)
    assert all(len(a) <= len(b) for a, b in itertools.pairwise(shown))
    sizes = [len(json.dumps(m)) for m in wire.custom]
    assert sum(sizes) < 1.2 * len(reply)  # the text goes once: appended, then promoted
    # The finished reply is not sent again: the last patch carries only the text of the last
    # 100 ms (up to 100 deltas of up to 20 characters: the faux provider's chunk sizes are
    # random) and the promotion, against the reply's ~88,000 characters.
    assert sizes[-1] < len(reply) // 20


async def test_patches_rebuild_the_state_and_a_late_page_gets_it_whole() -> None:
    clock = FakeClock()
    scheduler = FakeScheduler(clock)
    faux = register_faux_provider()
    try:
        faux.set_responses(
            [
                faux_assistant_message(
                    [
                        faux_thinking("hmm " * 50),
                        faux_text("abc " * 300),
                        faux_tool_call("ls", {}, id="c9"),
                    ]
                ),
                faux_assistant_message("done " * 40),
            ]
        )
        events: list[AgentEvent] = []
        agent = Agent(model=faux.get_model(), tools=[ls_tool()])
        agent.subscribe(events.append)
        await agent.prompt("go")
    finally:
        faux.unregister()
    view = RunView(clock=clock, scheduler=scheduler)
    wire = Wire(view)
    page = Page(content_state(view))
    late: Page | None = None
    ops: set[str] = set()
    for index, event in enumerate(events):
        view.handle(event)
        scheduler.advance(0.1)  # every event patches
        while page.state["patch_seq"] < view.patch_seq:
            message = wire.custom[page.state["patch_seq"]]
            ops.update(op[0] for op in message["ops"])
            assert page.receive(message)
            if late is not None:
                assert late.receive(message)
        assert page.state == content_state(view)
        if index == len(events) // 3:  # a page that joins now gets the whole state at once
            late = Page(content_state(view))
    assert {"push", "current", "blocks", "promote"} <= ops
    assert late is not None and late.state == page.state == content_state(view)
    assert view.messages[1]["blocks"][1]["text"] == "abc " * 300

    # A page that missed a patch sees the gap and asks for the state again.
    view2 = RunView(clock=clock, scheduler=scheduler)
    wire2 = Wire(view2)
    for event in events[:5]:
        view2.handle(event)
        scheduler.advance(0.1)
    page2 = Page(content_state(view2))
    for event in events[5:]:
        view2.handle(event)
        scheduler.advance(0.1)
    patches = [m for m in wire2.custom if m["seq"] > page2.state["patch_seq"]]
    assert not page2.receive(patches[1]) and page2.gaps == 1
    click(view2, {"type": "resync"})
    await settle(view2)
    page2.state.update(json.loads(json.dumps(wire2.updates[-1])))
    assert page2.state == content_state(view2)


# --- front-end requests --------------------------------------------------------------------------


async def test_steering_and_follow_ups_from_the_view_run_on_the_loop_thread() -> None:
    view = RunView()
    calls: list[tuple[str, str, int]] = []
    view.on_steer = lambda text: calls.append(("steer", text, threading.get_ident()))
    view.on_follow_up = lambda text: calls.append(("follow_up", text, threading.get_ident()))
    view.handle(AgentStartEvent())
    view.handle(MessageEndEvent(message=UserMessage(content="write a poem")))
    view.handle(MessageEndEvent(message=faux_assistant_message("Roses…")))

    worker = click(view, {"type": "steer", "text": "  make it rhyme "})
    assert calls == []  # nothing ran on the comm thread
    await settle(view)
    assert calls == [("steer", "make it rhyme", threading.get_ident())]
    assert calls[0][2] != worker.ident
    assert view.queued == [{"kind": "steer", "text": "make it rhyme"}]

    view.handle(MessageEndEvent(message=UserMessage(content="make it rhyme")))
    view.handle(AgentEndEvent(messages=[]))
    view.flush()
    assert [(i["kind"], i.get("origin")) for i in view.messages] == [
        ("user", "prompt"),
        ("assistant", None),
        ("user", "steer"),
    ]
    assert view.queued == [] and view.status == "done"

    click(view, {"type": "steer", "text": "one more thing"})  # the run is over: a follow-up
    await settle(view)
    assert calls[-1][:2] == ("follow_up", "one more thing")
    click(view, {"type": "follow_up", "text": "   "})  # blank: ignored
    await settle(view)
    assert len(calls) == 2


async def test_an_owner_that_notes_the_queue_itself_or_declines() -> None:
    view = RunView()
    live = True

    def steer(text: str) -> bool:
        if live:
            view.note_queued("steer", text)  # as the kernel's %steer path does
        return live

    view.on_steer = steer
    view.handle(AgentStartEvent())
    click(view, {"type": "steer", "text": "shorter"})
    await settle(view)
    assert view.queued == [{"kind": "steer", "text": "shorter"}]  # noted once, not twice
    live = False
    click(view, {"type": "steer", "text": "too late"})
    await settle(view)
    assert view.queued == [{"kind": "steer", "text": "shorter"}]
    assert view.notice == "Steer: nothing to do (the run may have ended)."


async def test_a_follow_up_run_in_the_same_view_goes_live_again() -> None:
    view = RunView()
    view.handle(AgentStartEvent())
    view.handle(AgentEndEvent(messages=[]))
    assert view.status == "done"
    view.note_queued("follow_up", "and then?")
    view.handle(AgentStartEvent())
    view.handle(MessageEndEvent(message=UserMessage(content="and then?")))
    view.flush()
    assert view.status == "waiting"
    assert view.messages[-1]["origin"] == "follow_up"
    with pytest.raises(ValueError, match="kind"):
        view.note_queued("later", "x")


async def test_every_front_end_message_is_handled_on_the_loop_thread() -> None:
    view = RunView()
    threads: list[int] = []
    send_state = view.send_state

    def record(key: Any = None) -> None:
        threads.append(threading.get_ident())
        send_state(key)

    view.send_state = record  # type: ignore[method-assign]
    message = {"content": {"data": {"method": "request_state"}}, "buffers": []}
    worker = threading.Thread(target=view._handle_msg, args=(message,))
    worker.start()
    worker.join()
    assert threads == []  # not answered on the comm's thread
    await settle()
    assert threads == [threading.get_ident()]
    view._handle_msg(message)  # already on the loop: handled at once
    assert len(threads) == 2


async def test_stop_calls_the_owner_and_denies_pending_approvals() -> None:
    view = RunView()
    stopped: list[int] = []
    view.on_stop = lambda: stopped.append(threading.get_ident())
    view.handle(AgentStartEvent())
    view.handle(ToolExecutionStartEvent(tool_call_id="c1", tool_name="rm", args={"path": "/"}))
    asking = asyncio.ensure_future(view.request_approval("c1", "rm", {"path": "/"}))
    await settle(view)
    assert view.status == "awaiting_approval"
    click(view, {"type": "stop"})
    assert await asking is False
    assert stopped == [threading.get_ident()]
    view.flush()
    approval = view.running_tools["c1"]["approval"]
    assert approval["state"] == "denied" and "stopped" in approval["reason"]


async def test_callback_failures_and_bad_requests_become_notices() -> None:
    view = RunView()

    def broken() -> None:
        raise RuntimeError("the harness is busy")

    async def broken_later(text: str) -> None:
        await asyncio.sleep(0)
        raise ValueError("Cannot steer while idle")

    view.on_stop = broken
    view.on_steer = broken_later
    view.handle(AgentStartEvent())
    click(view, {"type": "stop"})
    await settle(view)
    assert view.notice == "Stop failed: the harness is busy"
    click(view, {"type": "steer", "text": "hi"})
    await settle(view, rounds=10)
    assert view.notice == "Steer failed: Cannot steer while idle"
    click(view, {"type": "open_tree"})
    await settle(view)
    assert "no callback is set" in view.notice
    click(view, {"type": "launch_missiles"})
    await settle(view)
    assert "unknown widget request 'launch_missiles'" in view.notice
    click(view, ["not", "a", "dict"])  # type: ignore[arg-type]
    await settle(view)
    assert "malformed" in view.notice
    click(view, {"type": "dismiss_notice"})
    await settle(view)
    assert view.notice == ""


async def test_controls_show_which_callbacks_are_set() -> None:
    view = RunView()
    assert view.controls == {
        "stop": False,
        "stop_tool": False,
        "steer": False,
        "follow_up": False,
        "tree": False,
        "insert_code": False,
        "edit_code": "",
    }
    view.on_stop = lambda: None
    view.on_open_tree = lambda: None
    view.flush()
    assert view.controls == {
        "stop": True,
        "stop_tool": False,
        "steer": False,
        "follow_up": False,
        "tree": True,
        "insert_code": False,
        "edit_code": "",
    }
    view.on_stop = None
    view.flush()
    assert view.controls["stop"] is False
    # the code blocks' buttons: offered by the owner, shown only with a callback to take them
    view.set_code_actions(insert=True, edit_target="In [3]")
    view.flush()
    assert (view.controls["insert_code"], view.controls["edit_code"]) == (False, "")
    view.on_code_action = lambda action, source: None
    view.flush()
    assert (view.controls["insert_code"], view.controls["edit_code"]) == (True, "In [3]")
    with pytest.raises(TypeError, match="callable"):
        view.on_steer = "nope"  # type: ignore[assignment]


# --- approvals -----------------------------------------------------------------------------------


async def test_an_approval_is_resolved_by_a_click_from_another_thread() -> None:
    view = RunView()
    view.handle(AgentStartEvent())
    view.handle(ToolExecutionStartEvent(tool_call_id="c1", tool_name="rm", args={"path": "x"}))
    asking = asyncio.ensure_future(view.request_approval("c1", "rm", {"path": "x"}, timeout=30))
    await settle(view)
    assert view.running_tools["c1"]["approval"] == {
        "state": "pending",
        "timeout": 30,
        "reason": "",
        "preview": None,
        "review": False,
    }
    with pytest.raises(RuntimeError, match="already pending"):
        await view.request_approval("c1", "rm", {})
    click(view, {"type": "approval", "tool_call_id": "c1", "allow": True})
    assert await asking is True
    view.flush()
    assert view.running_tools["c1"]["approval"]["state"] == "allowed"
    assert view.status == "running_tools"

    view.handle(
        ToolExecutionEndEvent(
            tool_call_id="c1",
            tool_name="rm",
            result=AgentToolResult(content=[TextContent(text="ok")]),
            is_error=False,
        )
    )
    view.flush()
    assert view.messages[-1]["approval"]["state"] == "allowed"  # the finished card keeps it

    asking = asyncio.ensure_future(view.request_approval("c2", "rm", {"path": "y"}))
    await settle(view)
    assert view.running_tools["c2"]["tool_name"] == "rm"  # a card even before the tool started
    click(view, {"type": "approval", "tool_call_id": "c2", "allow": False})
    assert await asking is False


async def test_an_approval_shows_its_preview_and_offers_always_allow() -> None:
    view = RunView()
    view.handle(AgentStartEvent())
    preview: ApprovalPreview = {
        "title": "Run code cell In [3] (ab12cd34: 'df.plot()')",
        "language": "python",
        "source": "df.plot()",
        "diff": "",
        "always": True,
    }
    asking = asyncio.ensure_future(
        view.request_approval("c1", "run_cell", {"cell_id": "ab12"}, preview=preview)
    )
    await settle(view)
    assert view.running_tools["c1"]["approval"]["preview"] == preview
    click(view, {"type": "approval", "tool_call_id": "c1", "allow": True, "always": True})
    assert await asking is True
    assert view.answered_always("c1")
    view.flush()
    approval = view.running_tools["c1"]["approval"]
    assert approval["state"] == "allowed"
    assert approval["reason"] == "Always allowed for this session."
    assert approval["preview"] == preview  # the settled card still shows what was allowed

    # "always" is only taken where the card offered it, and never with Deny
    no_always = {**preview, "always": False}
    asking = asyncio.ensure_future(
        view.request_approval("c2", "edit_cell", {}, preview=cast(ApprovalPreview, no_always))
    )
    await settle(view)
    click(view, {"type": "approval", "tool_call_id": "c2", "allow": True, "always": True})
    assert await asking is True
    assert not view.answered_always("c2")
    asking = asyncio.ensure_future(view.request_approval("c3", "run_cell", {}, preview=preview))
    await settle(view)
    click(view, {"type": "approval", "tool_call_id": "c3", "allow": False, "always": True})
    assert await asking is False
    assert not view.answered_always("c3")


async def test_an_unanswered_approval_times_out_and_says_so() -> None:
    view = RunView()
    view.handle(ToolExecutionStartEvent(tool_call_id="c1", tool_name="rm", args={}))
    assert await view.request_approval("c1", "rm", {}, timeout=0.05) is None
    view.flush()
    assert view.running_tools["c1"]["approval"]["state"] == "timed_out"
    click(view, {"type": "approval", "tool_call_id": "c1", "allow": True})  # too late: ignored
    await settle(view)
    assert view.running_tools["c1"]["approval"]["state"] == "timed_out"
    with pytest.raises(ValueError, match="timeout"):
        await view.request_approval("c1", "rm", {}, timeout=0)


async def test_a_cancelled_approval_is_marked() -> None:
    view = RunView()
    view.handle(ToolExecutionStartEvent(tool_call_id="c1", tool_name="rm", args={}))
    asking = asyncio.ensure_future(view.request_approval("c1", "rm", {}))
    await settle()
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    view.flush()
    assert view.running_tools["c1"]["approval"]["state"] == "cancelled"
    assert view.status == "running_tools"


async def test_approval_wired_into_before_tool_call_with_a_real_agent(faux: FauxProvider) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("ls", {"path": "/"}, id="c1")]),
            faux_assistant_message("OK, I won't."),
        ]
    )
    view = RunView()

    async def ask(
        ctx: BeforeToolCallContext, signal: AbortSignal | None
    ) -> BeforeToolCallResult | None:
        allowed = await view.request_approval(
            ctx.tool_call.id, ctx.tool_call.name, ctx.args, timeout=5
        )
        return (
            None
            if allowed
            else BeforeToolCallResult(block=True, reason="The user denied this call.")
        )

    agent = Agent(model=faux.get_model(), tools=[ls_tool()], before_tool_call=ask)
    agent.subscribe(view.handle)
    run = asyncio.ensure_future(agent.prompt("list /"))
    for _ in range(200):
        await asyncio.sleep(0.005)
        if view.status == "awaiting_approval":
            break
    assert view.status == "awaiting_approval"
    click(view, {"type": "approval", "tool_call_id": "c1", "allow": False})
    await run
    result = next(i for i in view.messages if i["kind"] == "tool_result")
    assert result["is_error"] and result["text"] == "The user denied this call."
    assert result["approval"]["state"] == "denied"
    assert view.status == "done"


# --- errors, abort -------------------------------------------------------------------------------


async def test_stop_from_the_view_aborts_and_keeps_the_partial_reply() -> None:
    faux = register_faux_provider(tokens_per_second=400)
    try:
        reply = " ".join(f"w{i}" for i in range(2000))
        faux.set_responses([faux_assistant_message(reply)])
        agent = Agent(model=faux.get_model())
        view = RunView()
        view.on_stop = agent.abort
        agent.subscribe(view.handle)
        run = asyncio.ensure_future(agent.prompt("go"))
        for _ in range(400):
            await asyncio.sleep(0.01)
            if view.current.get("blocks"):
                break
        assert view.status == "streaming"
        click(view, {"type": "stop"})
        await run
        last = view.messages[-1]
        assert view.status == "aborted" and view.error == ""
        assert last["stop_reason"] == "aborted"
        text = last["blocks"][0]["text"]
        assert text and reply.startswith(text) and text != reply
        assert "stopped; partial reply kept" in view.transcript_text()
    finally:
        faux.unregister()


async def test_a_provider_error_is_shown_in_plain_words(faux: FauxProvider) -> None:
    faux.set_responses(
        [faux_assistant_message([], stop_reason="error", error_message="401 invalid API key")]
    )
    agent = Agent(model=faux.get_model())
    view = RunView()
    agent.subscribe(view.handle)
    await agent.prompt("hi")
    assert view.status == "error"
    # said once: by the failed reply (the front end words it "The model request failed: …"),
    # not again in the run's error line
    assert view.messages[-1]["error_message"] == "401 invalid API key" and view.error == ""
    assert view.transcript_text().count("401 invalid API key") == 1
    assert view.transcript_html().count("401 invalid API key") == 1


async def test_failures_reported_only_by_agent_end_or_by_the_owner() -> None:
    view = RunView()
    view.handle(AgentStartEvent())
    failure = faux_assistant_message(
        [faux_text("")], stop_reason="error", error_message="listener exploded"
    )
    view.handle(AgentEndEvent(messages=[failure]))
    assert view.status == "error" and view.error == ""
    assert view.messages[-1]["stop_reason"] == "error"
    assert view.transcript_text().count("listener exploded") == 1
    view.handle(AgentStartEvent())
    view.fail(RuntimeError("task died"))
    assert view.status == "error" and view.error == "The run failed: RuntimeError: task died"
    view.handle(type("Other", (), {"type": "queue_update"})())  # harness events are ignored


async def test_long_tool_output_is_previewed_and_sent_whole_on_request() -> None:
    view = RunView()
    wire = Wire(view)
    long_text = "".join(f"line {i}\n" for i in range(10_000))
    view.handle(ToolExecutionStartEvent(tool_call_id="c1", tool_name="cat", args={}))
    view.handle(
        ToolExecutionEndEvent(
            tool_call_id="c1",
            tool_name="cat",
            result=AgentToolResult(content=[TextContent(text=long_text)]),
            is_error=False,
        )
    )
    view.flush()
    item = view.messages[-1]
    assert len(item["text"]) == RESULT_PREVIEW_CHARS and item["text_length"] == len(long_text)
    click(view, {"type": "expand", "tool_call_id": "c1"})
    await settle()
    expanded = [m for m in wire.custom if m["type"] == "expanded"]
    assert expanded == [{"type": "expanded", "tool_call_id": "c1", "text": long_text}]


# --- resync and fallbacks ------------------------------------------------------------------------


def record_displays(monkeypatch: pytest.MonkeyPatch, mime: str) -> list[str]:
    """Replace IPython's ``display`` (as ``PiWidget.show`` calls it) by one that records the
    ``mime`` rendition of each display and of each update of it."""
    shown: list[str] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(obj._repr_mimebundle_()[0][mime])

    def fake_display(obj: Any, display_id: bool = False) -> Handle:
        assert display_id is True
        shown.append(obj._repr_mimebundle_()[0][mime])
        return Handle()

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    return shown


async def test_resync_resends_the_state_and_refreshes_a_stale_display(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = record_displays(monkeypatch, "text/plain")
    view = RunView()
    wire = Wire(view)
    view.show()
    view.handle(AgentStartEvent())
    view.handle(MessageEndEvent(message=UserMessage(content="hello")))
    view.handle(MessageEndEvent(message=faux_assistant_message("Hi there.")))
    view.handle(AgentEndEvent(messages=[]))
    view.resync()
    content = wire.updates[-1]
    assert set(content) == set(CONTENT_TRAITS)  # the run, not the 150 kB of ESM again
    assert content["status"] == "done" and len(content["messages"]) == 2
    assert len(shown) == 2 and "assistant: Hi there." in shown[-1]
    sent = len(wire.sent)
    view.resync()
    assert len(shown) == 2 and len(wire.sent) == sent  # nothing changed: nothing sent
    view.resync(full=True)
    assert "_esm" in wire.updates[-1] and len(shown) == 2


def test_text_and_html_fallbacks_tell_the_story() -> None:
    view = RunView()
    view.handle(AgentStartEvent())
    view.handle(
        MessageEndEvent(message=UserMessage(content="<script>alert(1)</script> list files"))
    )
    view.handle(
        MessageEndEvent(
            message=faux_assistant_message(
                [faux_text("Looking."), faux_tool_call("ls", {"path": "."})]
            )
        )
    )
    view.handle(
        ToolExecutionEndEvent(
            tool_call_id="x",
            tool_name="ls",
            result=AgentToolResult(content=[TextContent(text="a.txt")]),
            is_error=False,
        )
    )
    view.handle(AgentEndEvent(messages=[]))
    data, _ = view._repr_mimebundle_()
    plain = data["text/plain"]
    assert plain.startswith("pi run · done")
    assert "user: <script>alert(1)</script> list files" in plain
    assert 'assistant: Looking.\n→ ls({ "path": "." })' in plain
    assert "[ls result]\n  a.txt" in plain
    assert "<script>" not in data["text/html"] and "&lt;script&gt;" in data["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in data


def test_bundles_are_built_versioned_and_offline() -> None:
    package = json.loads((ROOT / "js" / "package.json").read_text())
    assert package["version"] == pi_notebook.__version__
    for name in ("run_view.js", "run_view.css", "session_tree.js", "session_tree.css", "vendor.js"):
        assert (STATIC / name).stat().st_size > 1000
    for name in ("run_view.js", "session_tree.js", "vendor.js"):
        source = (STATIC / name).read_text(encoding="utf-8")
        assert "export" in source and "render" in source
        assert not re.search(r"""(?:from|import)\s*\(?\s*["']https?:""", source)  # no CDN imports
    assert "render" in RunView()._esm


# --- in a real kernel ----------------------------------------------------------------------------

NOTEBOOK_CELLS = [
    """
import asyncio
from pi_notebook.agent.agent import Agent
from pi_notebook.ai import register_faux_provider, faux_assistant_message
from pi_notebook.notebook.widgets.run_view import RunView

faux = register_faux_provider(tokens_per_second=2000)
faux.set_responses([faux_assistant_message("Hello from the kernel. " * 40)])
agent = Agent(model=faux.get_model())
view = RunView(model=faux.get_model())
agent.subscribe(view.handle)
task = asyncio.get_running_loop().create_task(agent.prompt("hi"))  # a background run
view
""",
    "await agent.wait_for_idle()\nprint(view.status, len(view.messages))",
    "view.resync()  # what the extension's post_run_cell hook does",
]


@pytest.mark.timeout(120)
def test_an_executed_notebook_keeps_the_whole_run_in_its_widget_state() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source.strip()) for source in NOTEBOOK_CELLS]
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[1].outputs[0]["text"] == "done 2\n"
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    (model,) = [
        m["state"]
        for m in state.values()
        if m["state"].get("_anywidget_id", "").endswith("RunView")
    ]
    assert model["status"] == "done"
    assert [item["kind"] for item in model["messages"]] == ["user", "assistant"]
    assert model["messages"][1]["blocks"][0]["text"] == "Hello from the kernel. " * 40
    bundle = nb.cells[0].outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("pi run ·")


async def test_a_stall_signal_shows_until_data_flows_and_a_kept_write_says_saved(
    faux: FauxProvider,
) -> None:
    from pi_notebook.ai.options import StallNotice

    faux.set_responses([faux_assistant_message("late words")])
    events: list[AgentEvent] = []
    agent = Agent(model=faux.get_model())
    agent.subscribe(events.append)
    await agent.prompt("hi")
    view = RunView(model=faux.get_model())
    wire = Wire(view)
    first_delta = next(i for i, e in enumerate(events) if e.type == "message_update")
    for event in events[:first_delta]:
        view.handle(event)
    view.note_stall(StallNotice(stalled=True, waited_ms=5_400))
    view.flush()
    assert view.stalled_ms == 5_400
    assert view.transcript_text().startswith("pi run · waiting for the model — 5 s · faux/faux-1")
    assert wire.custom[-1]["set"]["stalled_ms"] == 5_400
    view.handle(events[first_delta])  # data flows: cleared before the LLM layer says so
    view.flush()
    assert view.stalled_ms == 0 and wire.custom[-1]["set"]["stalled_ms"] == 0
    for event in events[first_delta + 1 :]:
        view.handle(event)
    view.note_stall(StallNotice(stalled=True, waited_ms=9_000))  # late: the run is over
    view.flush()
    assert view.stalled_ms == 0 and view.status == "done"

    view.note_unsaved("disk full; this turn is not in the file yet")
    assert view.notice.startswith("Not saved to the session file: disk full")
    assert "! Not saved to the session file" in view.transcript_text()
    view.note_saved()
    assert view.notice.startswith("Saved: ")
    view.notice = ""  # dismissed
    view.note_saved()
    assert view.notice == ""


def test_a_run_that_ends_after_its_cell_refreshes_its_shown_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No cell may run after a background run ends (no post_run_cell hook to resync): the end
    itself brings the shown text/HTML up to date, else a page saves "waiting for the model"."""
    shown = record_displays(monkeypatch, "text/html")
    view = RunView()
    view.show()
    view.handle(AgentStartEvent())
    view.handle(MessageEndEvent(message=UserMessage(content="Second question")))
    view.resync()  # the last cell's hook, while the run still waits for the model
    assert "waiting for the model" in shown[-1] and len(shown) == 2
    view.handle(MessageEndEvent(message=faux_assistant_message("Second answer, kept.")))
    view.handle(AgentEndEvent(messages=[]))
    assert len(shown) == 3
    assert "pi run · done" in shown[-1] and "Second answer, kept." in shown[-1]
    view.resync()
    assert len(shown) == 3  # up to date already


def test_resync_without_content_refreshes_only_the_fallback() -> None:
    view = RunView()
    wire = Wire(view)
    view.handle(AgentStartEvent())
    view.handle(MessageEndEvent(message=UserMessage(content="hello")))
    view.flush()
    sent = len(wire.sent)
    view.resync(content=False)  # a page that applies the patches has all of it
    assert len(wire.sent) == sent
    view.resync()
    assert len(wire.sent) == sent  # nothing changed since: still nothing to send
    view.handle(MessageEndEvent(message=faux_assistant_message("Hi there.")))
    view.resync()
    assert set(wire.updates[-1]) == set(CONTENT_TRAITS)


async def test_the_header_shows_a_compaction_and_its_figures() -> None:
    """A compaction during the run (the harness's, before the next request) is shown as it
    starts, with the context's size, and with the compacted size once done."""
    from ..harness.test_auto_compaction import (
        MODEL,
        harness_before_a_compaction,
        reply,
        tool_call_reply,
    )

    harness, steps = await harness_before_a_compaction()
    view = RunView(model=MODEL)
    seen: list[str] = []
    ended: list[int] = []

    def watch(event: object) -> None:
        view.handle(event)
        if getattr(event, "type", None) == "compaction_start":
            seen.append(view._header()["compaction"])
        if getattr(event, "type", None) == "compaction_end":
            ended.append(view._header()["context_tokens"])

    harness.subscribe(watch)
    steps += [tool_call_reply(900), reply(total_tokens=300)]
    await harness.prompt("echo please")
    view.flush()
    # 900 reported by the last reply, and the tool result after it estimated
    (start,) = seen
    before = int(start.removeprefix("compacting: ").removesuffix(" tokens → …"))
    assert 900 < before < 950
    final = view.header["compaction"]
    assert final.startswith(f"compacted: {before} → ") and final.endswith(" tokens"), final
    after = int(final.split(" → ")[1].removesuffix(" tokens").replace(",", ""))
    assert 0 < after < before
    assert ended == [after]  # the context bar showed the compacted size until the next reply
