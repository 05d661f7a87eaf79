"""The Python ↔ JS widget contract, checked before the browser: the traits the Python widgets sync
(names and the shape of every value) are those in ``tests/fixtures/widget_contract.json``, the
fixture the front ends' vitest suite renders (``js/test/contract.test.js``). Change a trait on
either side and one of the two suites fails.

The states come from real runs (a faux model through ``Agent``, a real ``Session``). After an
intended protocol change, rewrite the fixture with
``PI_NOTEBOOK_UPDATE_CONTRACT=1 pytest tests/notebook/test_widget_contract.py`` and update the
front end to match.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

from pi_notebook.agent import Agent
from pi_notebook.ai import (
    AssistantMessage,
    FauxProvider,
    TextContent,
    UserMessage,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_notebook.ai.types import ToolResultMessage
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.notebook.checkpoints import Manifest, SkippedValue, StoredValue, ValueOrigin
from pi_notebook.notebook.restore.document_revert import plan_revert
from pi_notebook.notebook.restore.plan import RestorePlan, compare, recreate_cells
from pi_notebook.notebook.widgets.restore_view import RestoreView
from pi_notebook.notebook.widgets.run_view import CONTENT_TRAITS, RunView
from pi_notebook.notebook.widgets.tree_view import TreeView
from tests.notebook.test_run_view import ls_tool, settle
from tests.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "widget_contract.json"

# Values that differ between runs are normalised so the fixture is stable: clocks become 0 and
# session ids (UUIDs, in values and in keys) become "entry-N", the same N for the same id.
_CLOCKS = {"timestamp", "duration_ms", "started_at"}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def shape(value: Any) -> Any:
    """A value's structure: dicts by key, lists by the union of their items' shapes, scalars by
    JSON type. Two states with the same shape render through the same front-end code paths."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        shapes: list[Any] = []
        for item in value:
            s = shape(item)
            if s not in shapes:
                shapes.append(s)
        return ["list", *sorted(shapes, key=json.dumps)]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


class _Normaliser:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def text(self, value: str) -> str:
        return _UUID.sub(self._rename, value)

    def _rename(self, match: re.Match[str]) -> str:
        return self.names.setdefault(match.group(0), f"entry-{len(self.names) + 1}")

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {self.text(k): self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        if key in _CLOCKS and isinstance(value, int | float) and not isinstance(value, bool):
            return 0
        return value


def _state(widget: Any, traits: tuple[str, ...]) -> dict[str, Any]:
    state = widget.get_state(list(traits))
    normalise = _Normaliser()
    return {name: normalise(json.loads(json.dumps(state[name]))) for name in traits}


async def _finished_run(faux: FauxProvider) -> dict[str, Any]:
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
    agent = Agent(model=model, tools=[ls_tool()])
    view = RunView(model=model, thinking_level="low")
    agent.subscribe(view.handle)
    await agent.prompt("list files")
    view.flush()
    return _state(view, CONTENT_TRAITS)


async def _awaiting_approval(faux: FauxProvider) -> dict[str, Any]:
    """Mid-run: a reply streamed, its tool call waiting for Allow / Deny."""
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_text("I will delete it."), faux_tool_call("ls", {"path": "/"}, id="c2")]
            ),
            faux_assistant_message("Done."),
        ]
    )
    model = faux.get_model()
    view = RunView(model=model, thinking_level="off")
    asked = asyncio.Event()

    async def approve(context: Any, _signal: Any = None) -> None:
        asking = asyncio.ensure_future(
            view.request_approval(context.tool_call.id, "ls", {"path": "/"}, timeout=30)
        )
        asked.set()
        await asking

    agent = Agent(model=model, tools=[ls_tool()], before_tool_call=approve)
    agent.subscribe(view.handle)
    run = asyncio.ensure_future(agent.prompt("delete /"))
    await asyncio.wait_for(asked.wait(), 10)
    await settle(view)
    state = _state(view, CONTENT_TRAITS)
    view._settle_approvals(True, "")
    await asyncio.wait_for(run, 10)
    return state


def _tree() -> dict[str, Any]:
    session = Session.create(InMemorySessionStorage())
    first = session.append_message(UserMessage(content="hello", timestamp=1)).id
    session.append_message(
        AssistantMessage(
            content=[TextContent(text="hi")],
            api="faux",
            provider="faux",
            model="faux-1",
            stop_reason="stop",
            timestamp=2,
        )
    )
    session.append_label(first, "start")
    session.set_leaf(first)
    session.append_message(UserMessage(content="another branch", timestamp=3))
    view = TreeView(session)
    view.flush()
    return _state(view, tuple(TreeView.content_traits))


def _restore_plan() -> RestorePlan:
    """A real plan: two checkpoints compared, and one applied cell insert to undo."""
    h = "ab" * 32
    table = StoredValue(hash=h, type="pandas.DataFrame", size=120_000)
    handle = SkippedValue(
        "_io.TextIOWrapper",
        "cannot be pickled",
        serialisable=False,
        origin=ValueOrigin(3, "c3", "log = open('run.log')"),
    )
    there = Manifest(1, "e1", "run_start", 0.0, values={"df": table}, skipped={"log": handle})
    changed = StoredValue(hash="cd" * 32, type="pandas.DataFrame", size=90_000)
    now = Manifest(
        2, "e9", "manual", 0.0, values={"df": changed, "extra": StoredValue(h, "int", 5)}
    )
    session = Session.create(InMemorySessionStorage())
    session.append_message(
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="insert_cell",
            content=[TextContent(text="Inserted.")],
            details={
                "notebook": {
                    "action": "insert",
                    "applied": True,
                    "cell_id": "agent-c1",
                    "source": "x = 1",
                }
            },
        )
    )
    plan = RestorePlan(target_id="e1", target_title="user: fit a line", checkpoint=there, now=now)
    plan.variables = compare(there, now)
    plan.recreate = recreate_cells(plan.variables)
    plan.document = plan_revert(session.get_branch())
    return plan


async def _restore_states() -> tuple[dict[str, Any], dict[str, Any]]:
    session = Session.create(InMemorySessionStorage())
    session.append_message(UserMessage(content="fit a line", timestamp=1))
    tree = TreeView(session)
    plan = _restore_plan()
    asking = asyncio.ensure_future(tree.restore_slot.ask(plan.card()))
    await settle(tree)
    offered = _state(tree, tuple(TreeView.content_traits))
    tree.restore_slot.finish("done", "Variables restored to their values there: df.")
    asking.cancel()
    view = RestoreView()
    view.slot.card = plan.card()
    view.slot.finish("done", "Variables restored to their values there: df.")
    view.flush()
    cards = {
        "pending": {"card": plan.card(), "notice": ""},
        "done": _state(view, ("card", "notice")),
    }
    return offered, cards


async def _current_states(faux: FauxProvider) -> dict[str, Any]:
    offered, cards = await _restore_states()
    return {
        "run_view": {
            "finished_run": await _finished_run(faux),
            "awaiting_approval": await _awaiting_approval(faux),
        },
        "session_tree": {"two_branches": _tree(), "restore_offered": offered},
        "restore_card": cards,
    }


async def test_the_widgets_state_has_the_shapes_the_front_ends_are_tested_with(
    faux: FauxProvider,
) -> None:
    states = await _current_states(faux)
    if os.environ.get("PI_NOTEBOOK_UPDATE_CONTRACT"):
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(states, indent=1, ensure_ascii=False) + "\n", "utf-8")
    fixture = json.loads(Path(FIXTURE).read_text(encoding="utf-8"))
    assert sorted(fixture) == sorted(states)
    for widget, scenarios in states.items():
        assert sorted(fixture[widget]) == sorted(scenarios), widget
        for name, state in scenarios.items():
            assert shape(state) == shape(fixture[widget][name]), f"{widget}/{name}"


def test_shapes_see_a_renamed_or_retyped_field() -> None:
    base = {"messages": [{"kind": "user", "text": "hi"}], "status": "done"}
    assert shape(base) == shape({"messages": [{"kind": "assistant", "text": "x"}], "status": "x"})
    assert shape(base) != shape({"messages": [{"kind": "user", "body": "hi"}], "status": "done"})
    assert shape(base) != shape({"messages": [{"kind": "user", "text": 1}], "status": "done"})
    assert shape(base) != shape({"messages": [], "status": "done"})
