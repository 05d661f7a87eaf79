""" "Run All" in real kernels (nbclient): ``%thinking LEVEL`` and ``%tools add/remove`` behind a
``%%agent`` that is still streaming wait for their turn in the queue. The run above keeps the
thinking level and tools it started with for all its model calls; the next run gets the new
ones; each magic's outcome (or failure) is shown in its own cell; a typo in ``%tools add`` is
refused at once."""

from __future__ import annotations

from pathlib import Path

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}

SETUP = (
    FAUX_SETUP.format(tps=40)
    + '''
seen = []

def look(context, options, state, model):
    """A scripted reply that notes the tools and thinking level the model was called with."""
    seen.append((sorted(t.name for t in context.tools), options.reasoning))
    return faux_assistant_message("done")

def double(x: int) -> int:
    """Doubles x."""
    return 2 * x

streaming = faux_assistant_message([faux_text("word " * 50), faux_tool_call("double", {"x": 2})])
faux.set_responses([streaming, look, look])
'''
)


def test_thinking_and_tools_behind_a_streaming_run_apply_to_the_next_run(tmp_path: Path) -> None:
    nb = execute(
        [
            SETUP,
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%tools add double",  # nothing queued: at once
            "%%agent\nDouble 2, please",  # returns at once; streams, calls double, asks again
            "%thinking high",
            "%tools remove double",
            "%tools remove nosuch",
            "%%agent --wait\nAnd now?",
            "import pi_notebook\n"
            "assert len(seen) == 2, seen\n"
            "(first_tools, first_level), (second_tools, second_level) = seen\n"
            "assert 'double' in first_tools and first_level is None, seen[0]\n"
            "assert 'double' not in second_tools and second_level == 'high', seen[1]\n"
            "assert pi_notebook.current().harness.thinking_level == 'high'\n"
            "print('checked')",
        ],
        tmp_path,
        env=ENV,
    )
    assert outputs_text(nb.cells[2]) == "Added the tool double\n"
    assert outputs_text(nb.cells[4]) == "thinking: high"
    assert outputs_text(nb.cells[5]) == "Removed the tool double"
    assert outputs_text(nb.cells[6]) == (
        "%tools failed: No active tool named 'nosuch' (see %tools list)"
    )
    assert outputs_text(nb.cells[8]) == "checked\n"


def test_a_typo_behind_a_streaming_run_is_refused_at_once(tmp_path: Path) -> None:
    nb = execute(
        [
            SETUP,
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%%agent\nDouble 2, please",
            "%tools add nosuch",
            "%thinking",  # showing the level changes nothing: at once
            "await __import__('pi_notebook').current().wait()",
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    refused = outputs_text(nb.cells[3])
    assert refused.startswith("UsageError: No function or built-in tool named 'nosuch'"), refused
    assert outputs_text(nb.cells[4]).startswith("thinking: off (this model supports: "), nb.cells[4]
