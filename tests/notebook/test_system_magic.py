"""``%system`` and pi's instruction files in a real kernel (nbclient): what the model is sent,
what ``%system`` shows, and that the session keeps it (pi 1.6 system-message sections) for a
reopened notebook."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from pi_notebook import testing
from pi_notebook.notebook.analyst_prompt import ANALYST_OPENING

SETUP = """
from pi_notebook.ai import faux_assistant_message, register_faux_provider
faux = register_faux_provider()
prompts = []
def answer(context, options, state, model):
    prompts.append(context.system_prompt)
    return faux_assistant_message("ok")
faux.set_responses([answer] * 10)
%model faux/faux-1
"""
SHOW_PROMPT = "print(prompts[-1])"


def _write(directory: Path, name: str, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    nbformat.write(nb, path)
    return path


def test_system_prompt_shown_set_appended_reset_and_kept(tmp_path: Path) -> None:
    agents = tmp_path / "agent-dir"
    agents.mkdir()
    (agents / "AGENTS.md").write_text("Global rule: be brief.\n", encoding="utf-8")
    project = tmp_path / "project"
    (project / "analysis").mkdir(parents=True)
    (project / "AGENTS.md").write_text("Project rule: plot with matplotlib.\n", encoding="utf-8")
    workdir = project / "analysis"
    (workdir / "CLAUDE.md").write_text("Folder rule: the data is in data/.\n", encoding="utf-8")
    env = {"PI_CODING_AGENT_DIR": str(agents), "PI_NOTEBOOK_MODEL": ""}
    source = _write(
        tmp_path / "src",
        "analysis.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",
            SETUP,
            "%%agent --wait\nHi",
            SHOW_PROMPT,
            "%system set You are a careful data analyst.",
            "%system append Report numbers from real output.",
            "%%agent --wait\nAgain",
            SHOW_PROMPT,
            "%system",
            "%system frobnicate",
        ],
    )
    nb = testing.run_notebook(source, cassette=None, env=env, workdir=workdir)
    assert [e.index for e in nb.errors] == [9], nb.errors  # only the typo
    assert nb.errors[0].evalue == "%system frobnicate: use set TEXT, append TEXT or reset"
    first = nb.text(3)
    # pi's order: the default prompt, then the context files, global first, outermost first.
    assert first.startswith(ANALYST_OPENING)
    assert "\n\n<project_context>\n" in first
    positions = [first.index(rule) for rule in ("Global rule", "Project rule", "Folder rule")]
    assert positions == sorted(positions)
    assert f'<project_instructions path="{agents / "AGENTS.md"}">' in first
    assert nb.text(4) == "System prompt set; the next run uses it (%system shows it)."
    second = nb.text(7)
    # A section added later goes last, as pi replays it.
    assert second.startswith("You are a careful data analyst.\n\n<project_context>\n")
    assert second.endswith("\n\n<addendum>\nReport numbers from real output.\n</addendum>\n")
    shown = nb.text(8)
    assert shown.startswith(second.rstrip("\n"))
    assert "-- base prompt: the session's (%system set)" in shown
    assert f"-- context file: {workdir / 'CLAUDE.md'}" in shown

    # The session holds pi 1.6 system messages with those sections.
    entries = [json.loads(line) for line in nb.session_path.read_text().splitlines()]
    systems = [
        e["message"]
        for e in entries
        if e.get("type") == "message" and e["message"].get("role") == "system"
    ]
    assert [sorted(m["sections"]) for m in systems] == [
        ["preamble", "project_context"],
        ["preamble"],
        ["addendum"],
    ]

    # Reopened: the session's instructions are in force; reset goes back to the default.
    again = _write(
        tmp_path / "src2",
        "analysis.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",
            SETUP,
            "%%agent --wait\nStill there?",
            SHOW_PROMPT,
            "%system reset",
            "%%agent --wait\nAnd now?",
            SHOW_PROMPT,
        ],
    )
    nb = testing.run_notebook(again, cassette=None, env=env, workdir=workdir)
    nb.check()
    assert nb.text(3) == second
    reset = nb.text(6)
    assert reset.startswith(ANALYST_OPENING) and "\n\n<project_context>\n" in reset


def test_without_files_or_system_nothing_is_written(tmp_path: Path) -> None:
    agents = tmp_path / "empty-agent-dir"
    agents.mkdir()
    source = _write(
        tmp_path / "src",
        "plain.ipynb",
        ["%load_ext pi_notebook\n%agent_context off", SETUP, "%%agent --wait\nHi", SHOW_PROMPT],
    )
    workdir = tmp_path / "run"
    nb = testing.run_notebook(
        source,
        cassette=None,
        env={"PI_CODING_AGENT_DIR": str(agents), "PI_NOTEBOOK_MODEL": ""},
        workdir=workdir,
    )
    nb.check()
    assert nb.text(3).startswith(ANALYST_OPENING)
    assert '"role":"system"' not in nb.session_path.read_text()


def test_default_prompt_follows_the_tools_offered(tmp_path: Path) -> None:
    """The default prompt names the tools of the run it is sent with: ``%tools add`` and
    ``remove`` change it on the next run; ``%system set`` replaces it, ``reset`` brings it back."""
    agents = tmp_path / "empty-agent-dir"
    agents.mkdir()
    source = _write(
        tmp_path / "src",
        "tools.ipynb",
        [
            "%load_ext pi_notebook\n%agent_context off",
            SETUP,
            "%%agent --wait\nHi",
            SHOW_PROMPT,
            "%tools add run_python",
            "%%agent --wait\nAgain",
            SHOW_PROMPT,
            "%system",
            "%system set Be terse.\n%tools remove run_python",
            "%%agent --wait\nThird",
            SHOW_PROMPT,
            "%system reset",
            "%%agent --wait\nFourth",
            SHOW_PROMPT,
        ],
    )
    nb = testing.run_notebook(
        source,
        cassette=None,
        env={"PI_CODING_AGENT_DIR": str(agents), "PI_NOTEBOOK_MODEL": ""},
        workdir=tmp_path / "run",
    )
    nb.check()
    first, second = nb.text(3), nb.text(6)
    assert first.startswith(ANALYST_OPENING) and "run_python" not in first
    assert "Never make up, simulate or hard-code data" in first
    assert second.startswith(ANALYST_OPENING) and "Run code with run_python" in second
    shown = nb.text(7)
    assert shown.startswith(second.rstrip("\n"))
    assert "-- base prompt: the default, built for the tools offered" in shown
    assert nb.text(10) == "Be terse.\n"
    fourth = nb.text(13)
    assert fourth.startswith(ANALYST_OPENING) and "run_python" not in fourth
