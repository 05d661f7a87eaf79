"""pi's instruction files found and rendered as pi-coding-agent 1.6 does (its resource loader
and system-prompt builder, read in tests/golden/pi-1.6's installed package)."""

from __future__ import annotations

from pathlib import Path

from pi_notebook.harness.context_files import (
    ContextFile,
    instruction_sections,
    load_context_files,
    section_body,
    sections_patch,
    system_prompt_files,
)


def test_global_first_then_outermost_to_innermost_one_file_per_folder(tmp_path: Path) -> None:
    agents = tmp_path / "agent"
    agents.mkdir()
    (agents / "CLAUDE.md").write_text("global", encoding="utf-8")
    outer = tmp_path / "outer"
    inner = outer / "inner"
    inner.mkdir(parents=True)
    (outer / "AGENTS.md").write_text("outer", encoding="utf-8")
    (inner / "AGENTS.md").write_text("inner", encoding="utf-8")
    (inner / "AGENTS.override.md").write_text("\ufeffoverride", encoding="utf-8")  # wins; BOM
    found = load_context_files(inner, agents)
    assert [(Path(f.path).parent.name, f.content) for f in found] == [
        ("agent", "global"),
        ("outer", "outer"),
        ("inner", "override"),
    ]
    # The agent dir inside the tree is listed once, first.
    assert [f.content for f in load_context_files(inner, outer)] == ["outer", "override"]


def test_system_files_project_before_agent_dir(tmp_path: Path) -> None:
    agents = tmp_path / "agent"
    agents.mkdir()
    (agents / "SYSTEM.md").write_text("global system", encoding="utf-8")
    (agents / "APPEND_SYSTEM.md").write_text("global append", encoding="utf-8")
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    assert system_prompt_files(project, agents) == ("global system", "global append")
    (project / ".pi" / "SYSTEM.md").write_text("project system", encoding="utf-8")
    assert system_prompt_files(project, agents) == ("project system", "global append")
    assert system_prompt_files(project, tmp_path / "none") == ("project system", None)


def test_sections_as_pi_renders_them_and_the_patch_between_two_states() -> None:
    files = [ContextFile("/p/AGENTS.md", "Use pandas.")]
    sections = instruction_sections("Base.", "More.", files)
    assert sections == {
        "preamble": "Base.",
        "addendum": "<addendum>\nMore.\n</addendum>",
        "project_context": "<project_context>\nProject-specific instructions and guidelines:\n\n"
        '<project_instructions path="/p/AGENTS.md">\nUse pandas.\n</project_instructions>\n'
        "</project_context>",
    }
    assert section_body("addendum", sections["addendum"]) == "More."
    assert sections_patch(sections, sections) is None
    plain = instruction_sections("Base.", None, [])
    assert sections_patch(sections, plain) == {"addendum": None, "project_context": None}
    # Sections of pi's own (tools, rules, cwd) are left alone.
    assert sections_patch({"tools": "- read", **plain}, plain) is None
    assert sections_patch({}, plain) == {"preamble": "Base."}
