"""The magics in real kernels (nbclient), against the faux provider.

Each test writes a small notebook, executes it in a fresh ipykernel and checks the cells'
outputs and the session file next to it. Assertions that need live kernel objects run inside
the notebook (a failing assert fails the cell, which fails the test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

LOAD = "%load_ext pi_notebook\n%model faux/faux-1"
ROLES = (
    "import pi_notebook\n"
    "agent = pi_notebook.current()\n"
    "def roles():\n"
    "    ctx = agent.session.build_context()\n"
    "    return [m.role for m in ctx.messages]\n"
)


def setup(tps: float | None, *responses: str) -> str:
    return FAUX_SETUP.format(tps=tps) + f"faux.set_responses([{', '.join(responses)}])"


def session_lines(directory: Path, name: str = "test") -> list[dict[str, Any]]:
    path = directory / f"{name}.pi.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def user_entries(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """User message entries by their text."""
    out = {}
    for entry in lines:
        message = entry.get("message", {})
        if entry["type"] == "message" and message.get("role") == "user":
            content = message["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            out[text] = entry
    return out


ENV = {"JPY_SESSION_NAME": "test.ipynb"}


def test_wait_interpolation_and_the_session_file(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(None, "faux_assistant_message('Kernels run code.')"),
            LOAD,
            "topic = 'kernels'",
            "%%agent --wait\nWrite one line about {topic} and {{braces}}",
            # 'custom': the summary of the cells run before the prompt (the topic cell)
            ROLES + "assert roles() == ['custom', 'user', 'assistant'], roles()\n"
            "assert agent.last_run.state == 'done'\n"
            "assert agent.last_run.result.text == 'Kernels run code.'",
        ],
        tmp_path,
        env=ENV,
    )
    assert "pi_notebook: session test.pi.jsonl" in outputs_text(nb.cells[1])
    users = user_entries(session_lines(tmp_path))
    assert "Write one line about kernels and {braces}" in users
    assert "Kernels run code." in outputs_text(nb.cells[3])  # the text fallback of the view


def test_agent_returns_at_once_and_steer_lands_in_the_same_run(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(25, "faux_assistant_message('word ' * 40)", "faux_assistant_message('Short.')"),
            LOAD,
            "%%agent\nTell a long story",
            "%steer make it short",
            ROLES + "await agent.wait()\n"
            "assert roles() == ['user', 'assistant', 'user', 'assistant'], roles()\n"
            "assert len(agent.runs) == 1 and agent.last_run.result.text == 'Short.'",
        ],
        tmp_path,
        env=ENV,
    )
    assert "Steering: make it short" in outputs_text(nb.cells[3])
    texts = list(user_entries(session_lines(tmp_path)))
    assert texts == ["Tell a long story", "make it short"]


def test_replying_waits_for_the_reply_so_steering_comes_mid_run(tmp_path: Path) -> None:
    # "Run All" reaches %steer at once: awaiting the run's reply first makes the model get the
    # prompt alone, and the steering after its first reply, whatever the machine's load
    probe = (
        "seen = []\n"
        "def story(context, options, state, model):\n"
        "    seen.append([m.role for m in context.messages])\n"
        "    return faux_assistant_message('word ' * 40)\n"
        "def short(context, options, state, model):\n"
        "    seen.append([m.role for m in context.messages])\n"
        "    return faux_assistant_message('Short.')\n"
        "faux.set_responses([story, short])"
    )
    nb = execute(
        [
            FAUX_SETUP.format(tps=25) + probe,
            LOAD,
            "%%agent\nTell a long story",
            "import pi_notebook\nrun = pi_notebook.current().last_run\nawait run.replying()\n"
            "print('asked', faux.state.call_count, 'seen', seen, 'state', run.state)",
            "%steer make it short",
            ROLES + "await agent.wait()\n"
            "assert seen == [['user'], ['user', 'assistant', 'user']], seen\n"
            "assert roles() == ['user', 'assistant', 'user', 'assistant'], roles()\n"
            "await run.replying()  # a run that is over: at once\n"
            "print('over')",
        ],
        tmp_path,
        env=ENV,
    )
    assert outputs_text(nb.cells[3]) == "asked 1 seen [['user']] state running\n"
    assert "over" in outputs_text(nb.cells[5])


def test_follow_up_is_consumed_when_the_run_would_end(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(25, "faux_assistant_message('word ' * 20)", "faux_assistant_message('More.')"),
            LOAD,
            "%%agent\nStart",
            "%follow_up and then?",
            ROLES + "await agent.wait()\n"
            "assert roles() == ['user', 'assistant', 'user', 'assistant'], roles()",
        ],
        tmp_path,
        env=ENV,
    )
    assert "Follow-up queued: and then?" in outputs_text(nb.cells[3])


def test_abort_keeps_the_partial_reply(tmp_path: Path) -> None:
    execute(
        [
            setup(20, "faux_assistant_message('slow words ' * 200)"),
            LOAD,
            "%%agent\nTalk for a long time",
            "import asyncio\nawait asyncio.sleep(1.0)",
            "%abort",
            ROLES + "await agent.wait()\n"
            "reply = agent.last_run.result\n"
            "assert reply.stop_reason == 'aborted', reply.stop_reason\n"
            "assert 0 < len(reply.text) < len('slow words ' * 200)\n"
            "assert agent.last_run.state == 'aborted'",
        ],
        tmp_path,
        env=ENV,
    )
    saved = [e["message"] for e in session_lines(tmp_path) if e["type"] == "message"]
    assert saved[-1]["role"] == "assistant" and saved[-1]["stopReason"] == "aborted"
    assert saved[-1]["content"][0]["text"].startswith("slow words")


def test_fork_and_rerun_cells_make_sibling_branches(tmp_path: Path) -> None:
    replies = [f"faux_assistant_message('reply {i}')" for i in range(5)]
    execute(
        [
            setup(None, *replies),
            LOAD,
            "%%agent --wait\nfirst",
            "%%agent --wait\nsecond",
            "%fork",
            "%%agent --wait\nsecond, better",
            "%%agent --wait\nsame prompt",
            "%%agent --wait\nsame prompt",  # the same cell run again: a sibling, not a duplicate
            ROLES + "ctx = agent.session.build_context()\n"
            "assert [m.role for m in ctx.messages] == ['user', 'assistant'] * 3, roles()",
        ],
        tmp_path,
        env=ENV,
    )
    lines = session_lines(tmp_path)
    users: dict[str, list[dict[str, Any]]] = {}
    for entry in lines:
        message = entry.get("message", {})
        if entry["type"] == "message" and message.get("role") == "user":
            users.setdefault(message["content"][0]["text"], []).append(entry)
    assert users["second"][0]["parentId"] == users["second, better"][0]["parentId"]
    same = users["same prompt"]
    assert len(same) == 2 and same[0]["parentId"] == same[1]["parentId"]


def test_notebook_function_is_a_tool_and_redefining_updates_it(tmp_path: Path) -> None:
    def call(n: int) -> str:
        return f"faux_assistant_message([faux_tool_call('combine', dict(a=2, b=3), id='c{n}')])"

    execute(
        [
            setup(
                None,
                call(1),
                "faux_assistant_message('five')",
                call(2),
                "faux_assistant_message('six')",
            ),
            LOAD,
            "import pi_notebook\n"
            "@pi_notebook.tool\n"
            "def combine(a: int, b: int) -> int:\n"
            "    '''Combine two numbers.'''\n"
            "    return a + b",
            "%%agent --wait\nCombine 2 and 3",
            "def combine(a: int, b: int) -> int:\n    return a * b",
            "%%agent --wait\nCombine them again",
            ROLES + "results = [m for m in agent.session.build_context().messages"
            " if m.role == 'toolResult']\n"
            "assert [r.content[0].text for r in results] == ['5', '6'], results",
        ],
        tmp_path,
        env=ENV,
    )


def test_tools_magic_lists_and_enables_builtins(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(None),
            LOAD,
            "%tools list",
            "%tools remove describe_variable read_history",
            "%tools list",
            "%tools add describe_variable run_python",
            "import pi_notebook\n"
            "names = [t.name for t in pi_notebook.current().tools.active()]\n"
            "reads = ['list_variables', 'describe_variable', 'run_python', 'list_cells', "
            "'read_cell', 'read_last_error']\n"
            "writes = ['insert_cell', 'edit_cell', 'delete_cell', 'run_cell']\n"
            "assert names == reads + writes, names\n"
            "offered = [t.name for t in pi_notebook.current().tool_offer.offered_tools()]\n"
            "assert offered == reads, offered  # no frontend: no write tools",
        ],
        tmp_path,
        env=ENV,
    )
    assert "[off] run_python (built-in)" in outputs_text(nb.cells[2])
    assert "[on ] describe_variable (built-in)" in outputs_text(nb.cells[2])  # read-only: on
    assert "[off] describe_variable (built-in)" in outputs_text(nb.cells[4])
    listed = outputs_text(nb.cells[2]).splitlines()
    # the write tools are active but not offered without a frontend: the listing says so
    insert = next(line for line in listed if " insert_cell " in line)
    assert insert.startswith("[off] insert_cell (built-in)") and "not offered" in insert, insert
    # a description's first sentence, whole (its docstring wraps it over three lines)
    cells = next(line for line in listed if " list_cells " in line)
    assert cells.endswith("otherwise every cell the kernel ran, with its status."), cells


@pytest.mark.parametrize(
    ("cell", "needle"),
    [
        ("%fork --bogus", "unrecognized arguments"),
        ("%fork nowhere", "No entry or label 'nowhere'"),
        ("%thinking extreme", "invalid choice"),
        ("%%agent\nUse {missing}", "no variable named 'missing'"),
        # one wording whether IPython (empty body) or the magic (blank body) would see it
        ("%%agent", "The cell is empty: write the prompt below %%agent."),
        ("%%agent --wait\n", "The cell is empty: write the prompt below %%agent."),
        ("%%agent\n   \n", "The cell is empty: write the prompt below %%agent."),
        ("%model not-a-model", "PROVIDER/MODEL-ID"),
        ("%model nope/nope", "or local (the embedded local model)"),
        ("%tools add nosuch", "No function or built-in tool named 'nosuch'"),
        ("%session open /no/such/file.jsonl", "No session file"),
        ("%label", "the following arguments are required"),
    ],
)
def test_bad_arguments_print_a_usage_error_without_traceback(
    tmp_path: Path, cell: str, needle: str
) -> None:
    nb = execute([setup(None), LOAD, cell], tmp_path, env=ENV, allow_errors=True)
    text = outputs_text(nb.cells[2])
    # IPython prints a UsageError as one stderr line: no traceback, nothing else happens
    assert text.startswith("UsageError: ") and needle in text, text
    assert "Traceback" not in text and "Error" not in text.removeprefix("UsageError")


def test_steer_without_a_run_says_what_to_do(tmp_path: Path) -> None:
    nb = execute([setup(None), LOAD, "%steer hello", "%abort"], tmp_path, env=ENV)
    assert "No run is active" in outputs_text(nb.cells[2])
    assert "%follow_up" in outputs_text(nb.cells[2])
    assert "No run is active." in outputs_text(nb.cells[3])


def test_restarting_the_kernel_reopens_the_session(tmp_path: Path) -> None:
    first = [setup(None, "faux_assistant_message('remembered')"), LOAD, "%%agent --wait\nhello"]
    execute(first, tmp_path, env=ENV)
    probe = (
        "def reply(context, options, state, model):\n"
        "    seen.append([m.role for m in context.messages])\n"
        "    return faux_assistant_message('continued')\n"
        "seen = []\n"
        "faux.set_responses([reply])"
    )
    nb = execute(
        [
            setup(None) + "\n" + probe,
            "%load_ext pi_notebook",
            "%%agent --wait\nand now?",
            "assert seen == [['user', 'assistant', 'user']], seen",
        ],
        tmp_path,
        env=ENV,
    )
    assert "restored" in outputs_text(nb.cells[1])


def test_unload_removes_the_magics(tmp_path: Path) -> None:
    nb = execute(
        [setup(None), LOAD, "%unload_ext pi_notebook", "%steer hi"],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    assert "Line magic function `%steer` not found" in outputs_text(nb.cells[3])


@pytest.mark.local_llm
@pytest.mark.timeout(300)
def test_local_model_streams_into_the_session_file(tmp_path: Path) -> None:
    execute(
        [
            "%load_ext pi_notebook",
            "%model local",
            "%%agent --wait\nSay hello in five words.",
            ROLES + "reply = agent.last_run.result\n"
            "assert reply.stop_reason in ('stop', 'length'), reply.error_message\n"
            "assert reply.text.strip()",
        ],
        tmp_path,
        env=ENV,
        timeout=180,
    )
    saved = [e["message"] for e in session_lines(tmp_path) if e["type"] == "message"]
    assert saved[-1]["role"] == "assistant" and saved[-1]["provider"] == "local"


def test_fork_by_newest_label_and_by_the_short_id_tree_shows(tmp_path: Path) -> None:
    replies = [f"faux_assistant_message('reply {i}')" for i in range(4)]
    execute(
        [
            setup(None, *replies),
            LOAD,
            "%%agent --wait\nfirst",
            "%label here",
            "%%agent --wait\nsecond",
            "%label here",  # the same label again, on a newer entry
            "%fork here",
            ROLES + "await agent.wait()\n"
            "assert agent.session.get_label(agent.session.leaf_id) == 'here'\n"
            "assert roles() == ['user', 'assistant'] * 2, roles()",
            "from pi_notebook.notebook.widgets.tree_view import short_id\n"
            "first_user = agent.session.get_branch()[1]\n"
            "get_ipython().run_line_magic('fork', short_id(first_user.id))\n"
            "await agent.wait()\n"
            "assert agent.session.leaf_id == first_user.parent_id",
        ],
        tmp_path,
        env=ENV,
    )


TWO_MODELS = """
from pi_notebook.ai import custom_model, register_model
register_model(custom_model("plain", "http://127.0.0.1:9/v1", provider="lab"))
register_model(custom_model("thinker", "http://127.0.0.1:9/v1", provider="lab", reasoning=True))
"""


def test_thinking_keeps_the_level_asked_for_across_models(tmp_path: Path) -> None:
    """A level the model lacks is clamped for it, and comes back with a model that has it."""
    nb = execute(
        [
            "%load_ext pi_notebook",
            TWO_MODELS,
            "%model lab/plain",
            "%thinking high",
            "%model lab/thinker",
            "%thinking",
        ],
        tmp_path,
        env=ENV,
    )
    assert (
        outputs_text(nb.cells[3]).strip() == "thinking: off (high is not supported by this model)"
    )
    assert outputs_text(nb.cells[5]).startswith("thinking: high")
