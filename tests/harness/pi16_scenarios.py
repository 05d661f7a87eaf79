"""Session files pi_notebook writes for pi 1.6 to read (tests/golden/pi-1.6/sessions/ours/).

Deterministic: entry ids count up, the clock ticks a second per entry, message timestamps are
given. ``python -m tests.harness.pi16_scenarios`` rewrites the committed files; then
``node_modules/.bin/node generate.mjs read ours`` (in tests/golden/pi-1.6/sessions) records pi's
reading of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

from pi_notebook.ai import (
    AssistantMessage,
    Cost,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.harness import (
    CustomMessage,
    InMemorySessionStorage,
    Session,
    session_appends,
    session_fork,
    session_tree,
)
from pi_notebook.harness import session as session_module
from tests.paths import GOLDEN

OURS = GOLDEN / "pi-1.6" / "sessions" / "ours"
START = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)

READ = Tool(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
BASH = Tool(name="bash", description="Run a command", parameters={"type": "object"})
READ2 = Tool(name="read", description="Read a file, v2", parameters={"type": "object"})


@contextmanager
def _deterministic(n: int) -> Iterator[Callable[[], int]]:
    """Fixed ids and clock for ``Session`` while building scenario ``n``; yields a ms clock."""
    counter = itertools.count(1)
    ticks = itertools.count(1)
    base = START + timedelta(days=n)

    def new_id() -> str:
        return f"0{n:07x}-0000-7000-8000-{next(counter):012x}"

    def iso_now() -> str:
        moment = base + timedelta(seconds=next(ticks))
        return moment.isoformat(timespec="milliseconds")[:-6] + "Z"

    ms = itertools.count(int(base.timestamp() * 1000) + 500, 1000)
    with (  # the modules of Session that make ids and timestamps
        mock.patch.object(session_module, "new_id", new_id),
        mock.patch.object(session_module, "iso_now", iso_now),
        mock.patch.object(session_tree, "new_id", new_id),
        mock.patch.object(session_appends, "iso_now", iso_now),
        mock.patch.object(session_fork, "iso_now", iso_now),
    ):
        yield lambda: next(ms)


def _usage(inp: int, out: int, **extra: int) -> Usage:
    cost = Cost(input=inp / 1e6, output=out * 2 / 1e6, total=inp / 1e6 + out * 2 / 1e6)
    return Usage(input=inp, output=out, total_tokens=inp + out, cost=cost, **extra)


def _assistant(
    text: str | list[TextContent | ThinkingContent | ToolCall], at: int, **fields: object
) -> AssistantMessage:
    content = [TextContent(text=text)] if isinstance(text, str) else text
    stop = "toolUse" if any(isinstance(b, ToolCall) for b in content) else "stop"
    values: dict[str, object] = {"stop_reason": stop, "usage": _usage(10, 5), **fields}
    return AssistantMessage(
        content=content, api="faux", provider="faux", model="faux-1", timestamp=at, **values
    )


def _user(text: str, at: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=at)


def system_and_edits(path: Path) -> None:
    """System messages, new fields, usage entries, context edits, a compaction (checkpoint) and
    a final move back to an earlier reply, recorded by the thinking level written there."""
    with _deterministic(1) as now:
        session = Session.create(path, cwd="/work/notebook")
        session.append_model_change("faux", "faux-1")
        session.append_thinking_level_change("max")
        session.append_system_message(
            "You are a notebook agent.",
            sections={"kernel": "Python 3.12 kernel", "date": "Today is 2026-11-25."},
            tools_added=[READ, BASH],
            timestamp=now(),
        )
        first = session.append_message(_user("Look at data.csv", now()))
        call = ToolCall(id="call_1", name="read", arguments={"path": "data.csv"})
        session.append_message(
            _assistant(
                [ThinkingContent(thinking="read it"), call],
                now(),
                response_model="faux-1-2026",
                thinking_level="max",
                duration_ms=900,
                usage=_usage(100, 20, cache_write_1h=4, reasoning=6),
            )
        )
        result = session.append_message(
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="read",
                content=[TextContent(text="a,b\n1,2\n" * 20)],
                usage=_usage(2, 1),
                duration_ms=15,
                timestamp=now(),
            )
        )
        reply = session.append_message(_assistant("It has two columns.", now()))
        session.append_usage("cache_warm", "faux", "faux-1", _usage(0, 0, cache_write=300))
        session.append_context_edit(result.id, "[data.csv contents elided]")
        session.append_context_edit(first.id, "Look at data.csv (edited)")
        session.append_system_message(
            sections={"date": "Today is 2026-11-26.", "kernel": None},
            tools_removed=["bash", "read"],
            tools_added=[READ2],
            timestamp=now(),
        )
        session.append_message(
            CustomMessage(custom_type="cell", content="print(df)", display=True, timestamp=now())
        )
        failed = session.append_message(
            _assistant("partial", now(), stop_reason="error", error_message="overloaded")
        )
        session.append_context_edit(failed.id, None)
        second = session.append_message(_user("Summarise", now()))
        session.append_message(_assistant("Two columns, twenty rows.", now()))
        session.append_compaction(
            "The user looked at data.csv.", second.id, 2000, usage=_usage(50, 9)
        )
        session.append_message(_user("And now?", now()))
        session.append_message(_assistant("Now we plot.", now()))
        session.set_leaf(reply.id)  # nothing written, as pi 1.6: the next entry records it
        session.append_thinking_level_change("low")


def branches_and_retain_none(path: Path) -> None:
    """Branch summaries with usage, labels, a name, a retain-none compaction, a new branch."""
    with _deterministic(2) as now:
        session = Session.create(path, cwd="/work/notebook")
        session.append_system_message("Tree prompt.", tools_added=[READ], timestamp=now())
        session.append_message(_user("root", now()))
        root_reply = session.append_message(_assistant("root reply", now()))
        session.append_label(root_reply.id, "start")
        session.append_message(_user("left", now()))
        left = session.append_message(_assistant("left reply", now()))
        session.set_leaf(root_reply.id)
        session.append_branch_summary("Went left.", from_id=left.id, usage=_usage(30, 3))
        session.append_message(_user("right", now()))
        session.append_message(_assistant("right reply", now()))
        session.append_session_info("Branches")
        session.append_compaction("Everything so far.", None, 500, details={"files": []})
        session.append_message(_user("after", now()))
        session.append_message(_assistant("after reply", now()))
        session.append_custom("ext", {"k": 1})


def reset_leaf(path: Path) -> None:
    """A move before the first entry, then a new root (what pi 1.6 writes after ``resetLeaf``):
    pi reads the new root's context too."""
    with _deterministic(3) as now:
        session = Session.create(path, cwd="/work/notebook")
        session.append_message(_user("a", now()))
        session.append_message(_assistant("b", now()))
        session.set_leaf(None)
        session.append_message(_user("again", now()))


def copy_of_pi(path: Path) -> None:
    """pi's own 1.6 file (unknown entry, usage, deferred reply, every new field) written back by
    us: a fork of the whole session, then one more turn."""
    pi_file = GOLDEN / "pi-1.6" / "sessions" / "pi" / "system-messages.jsonl"
    with _deterministic(4) as now:
        source = Session.open(pi_file)
        memory = InMemorySessionStorage()
        memory.create(source.header, source.get_entries())  # no file: no parentSession path
        session = Session.open(memory).fork(path)
        session.append_message(_user("One more, from pi_notebook", now()))
        session.append_message(_assistant("Sure.", now(), thinking_level="max"))


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "branches-and-retain-none": branches_and_retain_none,
    "copy-of-pi": copy_of_pi,
    "reset-leaf": reset_leaf,
    "system-and-edits": system_and_edits,
}


def write_all(directory: Path) -> list[Path]:
    """Write every scenario into ``directory``; returns the files, sorted by name."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in sorted(SCENARIOS.items()):
        path = directory / f"{name}.jsonl"
        path.unlink(missing_ok=True)
        build(path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_all(OURS):
        print(written)
