"""The run view in a real JupyterLab and Chromium: streaming, Stop, steering, tool approvals.

Each test opens a notebook that loads the extension, registers a faux provider streaming at a
set rate (``%model faux/faux-1``), runs an ``%%agent`` cell and drives the widget like a user.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import pytest

from .lab import FAUX_IMPORTS, LabNotebook

# Generous: a loaded CI machine may be slow to start Lab and the kernels (no test asserts time).
pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LOAD = "%load_ext pi_notebook"


def faux_setup(tokens_per_second: int, responses: str, *, extra: str = "") -> str:
    """A cell registering a faux provider with ``responses`` (a Python expression)."""
    return "\n".join(
        [
            FAUX_IMPORTS,
            extra,
            f"faux = register_faux_provider(tokens_per_second={tokens_per_second})",
            f"faux.set_responses({responses})",
            "%model faux/faux-1",
        ]
    )


def words(text: str) -> list[str]:
    return text.split()


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or () if b.get("type") == "text")


def test_reply_streams_in_and_stop_keeps_the_partial_reply(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    story = '" ".join(f"word{i:04d}" for i in range(800))'
    nb = open_notebook(
        "stream_stop.ipynb",
        [
            LOAD,
            faux_setup(40, f"[faux_assistant_message({story})]"),
            "%%agent\nTell me a very long story.",
        ],
    )
    nb.run_and_wait(0, 1)
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")
    live = run.locator(".pi-live .pi-text")

    # The reply grows in the DOM while the model streams: sample it until it grew several times.
    samples: list[list[str]] = []

    def grew_enough() -> bool:
        text = live.inner_text() if live.count() else ""
        if text.strip() and (not samples or text.split() != samples[-1]):
            samples.append(words(text))
        return len(samples) >= 5

    nb.wait_until(grew_enough, "the streamed reply to grow five times")
    for before, after in itertools.pairwise(samples):
        assert len(after) >= len(before)
        assert after[: len(before) - 1] == before[:-1]  # only the last word may still grow
    assert samples[0][0] == "word0000"
    assert len(samples[-1]) > len(samples[0])
    assert run.locator(".pi-status").inner_text() == "streaming"

    run.locator(".pi-stop-button").click()
    status = run.locator(".pi-status.pi-status-aborted")
    status.wait_for()
    assert status.inner_text() == "stopped"
    kept = run.locator(".pi-transcript .pi-assistant")
    kept.locator(".pi-stop-aborted").wait_for()
    assert "partial reply" in kept.locator(".pi-stop-aborted").inner_text()
    partial = words(kept.locator(".pi-text").inner_text())
    assert len(partial) >= len(samples[-1]) - 1
    assert partial[:-1] == [f"word{i:04d}" for i in range(len(partial) - 1)]
    assert len(partial) < 800  # stopped before the end
    assert run.locator(".pi-live .pi-text").count() == 0
    nb.screenshot(run, "run_view_stopped.png")

    # The session file keeps the same partial reply, marked aborted.
    replies = [
        e["message"]
        for e in nb.session_entries()
        if e.get("type") == "message" and e["message"].get("role") == "assistant"
    ]
    assert replies[-1]["stopReason"] == "aborted"
    assert words(message_text(replies[-1])) == partial


STEER_SETUP = """
def echo(context, options, state, model):
    last = context.messages[-1]
    text = last.content if isinstance(last.content, str) else " ".join(
        block.text for block in last.content if block.type == "text")
    return faux_assistant_message(f"Second reply, after: {text}")
first = " ".join(f"alpha{i:03d}" for i in range(150))
"""


def test_steering_from_the_box_reaches_the_model(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    nb = open_notebook(
        "steer.ipynb",
        [
            LOAD,
            faux_setup(40, "[faux_assistant_message(first), echo]", extra=STEER_SETUP),
            "%%agent\nWrite a long list.",
        ],
    )
    nb.run_and_wait(0, 1)
    nb.run(2)
    run = nb.cell(2).locator(".pi-run")
    run.locator(".pi-live .pi-text", has_text="alpha000").wait_for()
    box = run.locator(".pi-steer-input")
    assert box.get_attribute("placeholder") == "Steer the running agent…"
    box.fill("make it shorter please")
    box.press("Enter")

    # Queued while the first reply streams on, then injected before the model's next call.
    steer = run.locator(".pi-transcript .pi-user.pi-origin-steer")
    steer.wait_for()
    assert steer.locator(".pi-user-text").inner_text() == "make it shorter please"
    assert steer.locator(".pi-badge").inner_text() == "steering"
    second = run.locator(".pi-transcript .pi-assistant", has_text="Second reply")
    second.wait_for()
    assert second.inner_text().startswith("Second reply, after: make it shorter please")
    run.locator(".pi-status.pi-status-done").wait_for()
    assert run.locator(".pi-queued-item").count() == 0

    # Transcript order: prompt, the whole first reply, the steering message, the second reply.
    items = run.locator(".pi-transcript > .pi-msg")
    kinds = items.evaluate_all(
        "(els) => els.map((el) => el.className.match(/pi-(user|assistant)/)[1])"
    )
    assert kinds == ["user", "assistant", "user", "assistant"]
    first_reply = words(items.nth(1).locator(".pi-text").inner_text())
    assert first_reply[0] == "alpha000" and first_reply[-1] == "alpha149"
    nb.screenshot(run, "run_view_steered.png")


TOOLS = '''
import pi_notebook
ran = []

@pi_notebook.tool(requires_approval=True)
def delete_rows(table: str, count: int) -> str:
    """Delete rows from a table.

    Args:
        table: The table.
        count: How many rows to delete.
    """
    ran.append("delete_rows")
    return f"Deleted {count} rows from {table}"

@pi_notebook.tool(requires_approval=True)
def send_email(to: str) -> str:
    """Send an email.

    Args:
        to: The address.
    """
    ran.append("send_email")
    return f"Sent to {to}"
'''

TOOL_REPLIES = """[
    faux_assistant_message(faux_tool_call("delete_rows", {"table": "orders", "count": 3},
                                          id="call_delete")),
    faux_assistant_message(faux_tool_call("send_email", {"to": "boss@example.com"},
                                          id="call_email")),
    faux_assistant_message("One table cleaned; no email was sent."),
]"""


def test_tool_calls_wait_for_allow_and_deny(open_notebook: Callable[..., LabNotebook]) -> None:
    nb = open_notebook(
        "approvals.ipynb",
        [
            LOAD,
            TOOLS,
            faux_setup(40, TOOL_REPLIES),
            "%%agent\nClean the orders table and tell my boss.",
            "print(sorted(ran))",
        ],
    )
    nb.run_and_wait(0, 1, 2)
    nb.run(3)
    run = nb.cell(3).locator(".pi-run")

    delete = run.locator('.pi-tool[data-tool-call-id="call_delete"]')
    delete.locator(".pi-allow").wait_for()
    run.locator(".pi-status.pi-status-awaiting_approval").wait_for()
    assert "Run this tool call?" in delete.locator(".pi-tool-approval").inner_text()
    assert "orders" in delete.locator(".pi-tool-args-text").text_content()
    nb.screenshot(run, "run_view_approval_pending.png")
    delete.locator(".pi-allow").click()
    delete.locator(".pi-tool-result", has_text="Deleted 3 rows from orders").wait_for()
    assert "pi-tool-ok" in (delete.get_attribute("class") or "")
    assert delete.locator(".pi-approval-allowed").inner_text().startswith("Allowed.")

    email = run.locator('.pi-tool[data-tool-call-id="call_email"]')
    email.locator(".pi-deny").wait_for()
    email.locator(".pi-deny").click()
    email.locator(".pi-tool-error-text").wait_for()
    assert "denied send_email" in email.locator(".pi-tool-error-text").inner_text()
    assert "pi-tool-error" in (email.get_attribute("class") or "")
    assert email.locator(".pi-approval-denied").inner_text().startswith("Denied.")

    run.locator(".pi-status.pi-status-done").wait_for()
    final = run.locator(".pi-transcript .pi-assistant", has_text="no email was sent")
    assert final.count() == 1
    nb.screenshot(run, "run_view_tools.png")
    nb.screenshot_page("lab_notebook_tools.png")

    # Only the allowed tool ran in the kernel.
    nb.run_and_wait(4)
    assert re.sub(r"\s+", "", nb.output_text(4)) == "['delete_rows']"


def test_a_page_reloaded_mid_stream_shows_the_whole_reply_so_far(
    open_notebook: Callable[..., LabNotebook],
) -> None:
    # long enough to be streaming still when Stop is pressed, however slow the reload is (under
    # a full suite's load 1,500 words could end first, and Stop then has nothing to abort)
    story = '" ".join(f"word{i:04d}" for i in range(6000))'
    nb = open_notebook(
        "reload.ipynb",
        [LOAD, faux_setup(100, f"[faux_assistant_message({story})]"), "%%agent\nGo on and on."],
    )
    nb.run_and_wait(0, 1)
    nb.run(2)
    live = nb.cell(2).locator(".pi-run .pi-live .pi-text")
    nb.wait_until(lambda: len(words(live.inner_text())) > 40, "40 words of the reply")
    before = len(words(live.inner_text()))

    nb.save_and_reload()
    # The view comes back from the kernel's state (the reply sent whole plus the text streamed
    # since) and keeps streaming: the words run on without a gap or a repeat.
    run = nb.cell(2).locator(".pi-run")
    live = run.locator(".pi-live .pi-text")
    counts: list[int] = []

    def streams_on() -> bool:
        if live.count():
            shown = words(live.inner_text())
            assert shown[:-1] == [f"word{i:04d}" for i in range(len(shown) - 1)]
            counts.append(len(shown))
        return len(counts) >= 2 and counts[-1] > counts[0] >= before

    nb.wait_until(streams_on, "the reloaded view to show the reply and keep streaming")
    assert run.locator(".pi-status").inner_text() == "streaming"
    run.locator(".pi-stop-button").click()
    run.locator(".pi-status.pi-status-aborted").wait_for()
