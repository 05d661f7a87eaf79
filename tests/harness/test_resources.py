"""Skills and prompt templates: discovery rules, ignore files, frontmatter, diagnostics, the
model-visible listing, invocation texts and argument substitution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_notebook.harness.resources import (
    FrontmatterError,
    PromptTemplate,
    Resources,
    Skill,
    format_prompt_template_invocation,
    format_skill_invocation,
    format_skills_for_system_prompt,
    load_prompt_templates,
    load_skills,
    parse_frontmatter,
    parse_template_args,
    substitute_template_args,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_file(name: str, description: str = "Does things.", body: str = "Body.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


# --- frontmatter ---------------------------------------------------------------------------------


def test_frontmatter_subset() -> None:
    text = (
        "---\n"
        "name: demo  # a comment\n"
        "description: 'It''s: quoted'\n"
        'title: "tab\\there"\n'
        "disable-model-invocation: true\n"
        "count: 3\n"
        "ratio: 0.5\n"
        "empty:\n"
        "tags: [a, 'b c', 3]\n"
        "allowed-tools:\n"
        "  - read\n"
        "  - write\n"
        "metadata:\n"
        "  owner: me\n"
        "  nested:\n"
        "    deep: yes\n"
        "items:\n"
        "- key: one\n"
        "  other: two\n"
        "notes: |\n"
        "  line 1\n"
        "    indented\n"
        "\n"
        "  line 3\n"
        "folded: >-\n"
        "  a\n"
        "  b\n"
        "---\n"
        "\n# Title\r\nbody\n\n"
    )
    data, body = parse_frontmatter(text)
    assert data == {
        "name": "demo",
        "description": "It's: quoted",
        "title": "tab\there",
        "disable-model-invocation": True,
        "count": 3,
        "ratio": 0.5,
        "empty": None,
        "tags": ["a", "b c", 3],
        "allowed-tools": ["read", "write"],
        "metadata": {"owner": "me", "nested": {"deep": "yes"}},
        "items": [{"key": "one", "other": "two"}],
        "notes": "line 1\n  indented\n\nline 3\n",
        "folded": "a b",
    }
    assert body == "# Title\nbody"


def test_frontmatter_absent_unterminated_and_malformed() -> None:
    assert parse_frontmatter("just text\n") == ({}, "just text")
    assert parse_frontmatter("---\nname: x\nno end\n") == ({}, "---\nname: x\nno end")
    # PyYAML's words, with the line and column in the file (pi reports its YAML library's words)
    with pytest.raises(FrontmatterError, match="must be a mapping of keys to values"):
        parse_frontmatter("---\nname x\n---\nbody")
    with pytest.raises(FrontmatterError, match=r"mapping values are not allowed here \(line 3,"):
        parse_frontmatter("---\nname: x\n    extra: y\n---\n")
    with pytest.raises(FrontmatterError, match="end of stream while scanning a quoted scalar"):
        parse_frontmatter("---\nname: 'x\n---\n")
    with pytest.raises(FrontmatterError, match=r"duplicate key 'name' \(line 3, column 1\)"):
        parse_frontmatter("---\nname: x\nname: y\n---\n")
    with pytest.raises(FrontmatterError, match="unhashable key"):
        parse_frontmatter("---\n[1]: x\n---\n")
    assert parse_frontmatter("---\n---\nbody") == ({}, "body")


def test_frontmatter_is_read_as_yaml_1_2_not_1_1() -> None:
    data, _ = parse_frontmatter("---\na: yes\nb: off\nc: 2024-01-01\nd: TRUE\ne: false\n---\n")
    assert data == {"a": "yes", "b": "off", "c": "2024-01-01", "d": True, "e": False}


# --- skills --------------------------------------------------------------------------------------


def test_skill_discovery_rules(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root / "top.md", "---\nname: top\ndescription: A top-level file.\n---\nTop body.")
    write(root / "alpha" / "SKILL.md", skill_file("alpha"))
    write(root / "alpha" / "inner" / "SKILL.md", skill_file("inner"))  # below a skill root
    write(root / "alpha" / "notes.md", skill_file("notes"))  # not SKILL.md, not top level
    write(root / "group" / "beta" / "SKILL.md", skill_file("beta"))
    write(root / "group" / "readme.md", skill_file("readme"))  # only top-level *.md count
    write(root / ".hidden" / "SKILL.md", skill_file("hidden"))
    write(root / "node_modules" / "dep" / "SKILL.md", skill_file("dep"))
    skills, diagnostics = load_skills([root])
    assert [s.name for s in skills] == ["alpha", "beta", "top"]
    alpha = skills[0]
    assert alpha.content == "Body." and alpha.description == "Does things."
    assert alpha.file_path == str(root / "alpha" / "SKILL.md")
    assert alpha.base_dir == str(root / "alpha")
    # "top" is not named after its directory ("skills"): loaded, with a diagnostic
    assert [d.message for d in diagnostics] == [
        'name "top" does not match parent directory "skills"'
    ]


def test_a_directory_with_skill_md_is_itself_a_skill(tmp_path: Path) -> None:
    write(tmp_path / "solo" / "SKILL.md", skill_file("solo"))
    write(tmp_path / "solo" / "other.md", skill_file("other"))
    skills, _ = load_skills([tmp_path / "solo"])
    assert [s.name for s in skills] == ["solo"]


def test_ignore_files_are_honoured_and_rerooted(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root / ".gitignore", "drafts/\n*.tmp.md\n!keep.tmp.md\n/anchored.md\n")
    write(root / "drafts" / "wip" / "SKILL.md", skill_file("wip"))
    write(root / "scratch.tmp.md", skill_file("scratch"))
    write(root / "keep.tmp.md", "---\nname: keep\ndescription: kept\n---\n")
    write(root / "anchored.md", skill_file("anchored"))
    write(root / "group" / ".ignore", "old\n")
    write(root / "group" / "old" / "SKILL.md", skill_file("old"))
    write(root / "group" / "new" / "SKILL.md", skill_file("new"))
    write(root / "group" / "sub" / "anchored.md", skill_file("ignored-anyway"))
    write(root / "other" / "old" / "SKILL.md", skill_file("old2"))  # .ignore of group only
    write(root / "fd" / ".fdignore", "**/SKILL.md\n")
    write(root / "fd" / "x" / "SKILL.md", skill_file("x"))
    skills, _ = load_skills([root])
    names = sorted(s.name for s in skills)
    assert names == ["keep", "new", "old2"]


def test_ignore_rules_of_a_deeper_directory_can_re_include(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root / ".gitignore", "SKILL.md\n**/beta/\n# a comment\n\\#hash/\n")
    write(root / "group" / ".gitignore", "!alpha/SKILL.md\n!beta/SKILL.md\n")
    write(root / "group" / "alpha" / "SKILL.md", skill_file("alpha"))  # re-included below
    write(root / "group" / "beta" / "SKILL.md", skill_file("beta"))  # its directory is ignored
    write(root / "group" / "gamma" / "SKILL.md", skill_file("gamma"))
    write(root / "#hash" / "alpha2" / "x.md", skill_file("x"))  # an escaped "#"
    write(root / "top.md", skill_file("top"))
    skills, _ = load_skills([root])
    assert sorted(s.name for s in skills) == ["alpha", "top"]


def test_skill_diagnostics_and_collisions(tmp_path: Path) -> None:
    write(tmp_path / "a" / "no-desc" / "SKILL.md", "---\nname: no-desc\n---\nbody")
    write(tmp_path / "a" / "Bad--Name-" / "SKILL.md", skill_file("Bad--Name-"))
    write(tmp_path / "a" / "long" / "SKILL.md", skill_file("long", "d" * 1025))
    write(tmp_path / "a" / "dup" / "SKILL.md", skill_file("dup"))
    write(tmp_path / "b" / "dup" / "SKILL.md", skill_file("dup", "second"))
    write(tmp_path / "a" / "broken" / "SKILL.md", "---\nname: broken\n  bad: [\n---\n")
    write(
        tmp_path / "a" / "hidden" / "SKILL.md",
        skill_file("hidden").replace("---\n\n", "disable-model-invocation: true\n---\n\n"),
    )
    skills, diagnostics = load_skills([tmp_path / "a", tmp_path / "b", tmp_path / "missing"])
    assert [s.name for s in skills] == ["Bad--Name-", "dup", "hidden", "long"]
    assert skills[1].description == "Does things."  # the first "dup" wins
    assert skills[2].disable_model_invocation is True
    messages = {(os.path.basename(os.path.dirname(d.path)), d.type, d.message) for d in diagnostics}
    assert ("no-desc", "warning", "description is required") in messages
    assert ("long", "warning", "description exceeds 1024 characters (1025)") in messages
    bad = {m for folder, _, m in messages if folder == "Bad--Name-"}
    assert bad == {
        "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
        "name must not start or end with a hyphen",
        "name must not contain consecutive hyphens",
    }
    assert any(t == "collision" and f == "dup" for f, t, _ in messages)
    assert any(f == "broken" and m.startswith("failed to load skill") for f, _, m in messages)
    assert any(d.message == "skill path does not exist" for d in diagnostics)


def test_skill_name_defaults_to_the_directory_and_long_names(tmp_path: Path) -> None:
    write(tmp_path / "unnamed" / "SKILL.md", "---\ndescription: d\n---\nx")
    long_name = "a" * 65
    write(tmp_path / long_name / "SKILL.md", skill_file(long_name))
    skills, diagnostics = load_skills([tmp_path])
    assert {s.name for s in skills} == {"unnamed", long_name}
    assert [d.message for d in diagnostics] == ["name exceeds 64 characters (65)"]


def test_symlink_loops_terminate(tmp_path: Path) -> None:
    write(tmp_path / "s" / "real" / "SKILL.md", skill_file("real"))
    (tmp_path / "s" / "loop").mkdir()
    (tmp_path / "s" / "loop" / "back").symlink_to(tmp_path / "s", target_is_directory=True)
    skills, _ = load_skills([tmp_path / "s"])
    assert [s.name for s in skills] == ["real"]


def test_listing_for_the_system_prompt() -> None:
    skills = [
        Skill("a", "A skill", "Use a.", "/skills/a/SKILL.md"),
        Skill("b<>&'\"", "B skill", "Use b.", "/skills/b/SKILL.md"),
        Skill("hidden", "Hidden", "x", "/skills/hidden/SKILL.md", disable_model_invocation=True),
    ]
    assert format_skills_for_system_prompt(skills) == (
        "The following skills provide specialized instructions for specific tasks.\n"
        "Read the full skill file when the task matches its description.\n"
        "When a skill file references a relative path, resolve it against the skill directory "
        "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.\n"
        "\n"
        "<available_skills>\n"
        "  <skill>\n"
        "    <name>a</name>\n"
        "    <description>A skill</description>\n"
        "    <location>/skills/a/SKILL.md</location>\n"
        "  </skill>\n"
        "  <skill>\n"
        "    <name>b&lt;&gt;&amp;&apos;&quot;</name>\n"
        "    <description>B skill</description>\n"
        "    <location>/skills/b/SKILL.md</location>\n"
        "  </skill>\n"
        "</available_skills>"
    )
    assert format_skills_for_system_prompt(skills[2:]) == ""


def test_skill_invocation_text_matches_the_golden_session() -> None:
    skill = Skill("demo-skill", "Demo", "Do the demo thing.", "/skills/demo-skill/SKILL.md")
    assert format_skill_invocation(skill, "extra instructions") == (
        '<skill name="demo-skill" location="/skills/demo-skill/SKILL.md">\n'
        "References are relative to /skills/demo-skill.\n\nDo the demo thing.\n</skill>"
        "\n\nextra instructions"
    )
    assert format_skill_invocation(skill).endswith("</skill>")
    assert format_skill_invocation(skill, "") == format_skill_invocation(skill)


# --- prompt templates ----------------------------------------------------------------------------


def test_template_loading(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    write(folder / "review.md", "---\ndescription: Review a file\n---\nReview $1 carefully.")
    write(folder / "long.md", "\n\n" + "x" * 70 + "\nsecond line")
    write(folder / "short.md", "Short first line\nmore")
    write(folder / "nested" / "deep.md", "not loaded: directories are not recursive")
    write(folder / "notes.txt", "not markdown")
    single = write(tmp_path / "elsewhere" / "one.md", "One $@")
    duplicate = write(tmp_path / "other" / "review.md", "Another review")
    templates, diagnostics = load_prompt_templates([folder, single, duplicate, tmp_path / "nope"])
    assert [t.name for t in templates] == ["long", "review", "short", "one"]
    by_name = {t.name: t for t in templates}
    assert by_name["review"].description == "Review a file"
    assert by_name["review"].content == "Review $1 carefully."
    assert by_name["long"].description == "x" * 60 + "..."
    assert by_name["short"].description == "Short first line"
    assert by_name["one"].file_path == str(single)
    assert [d.type for d in diagnostics] == ["collision", "warning"]


def test_argument_parsing() -> None:
    assert parse_template_args("src/app.ts --strict") == ["src/app.ts", "--strict"]
    assert parse_template_args("  a\t'b c'  \"d 'e'\" f\"g h\" ") == ["a", "b c", "d 'e'", "fg h"]
    assert parse_template_args("'' x") == ["x"]
    assert parse_template_args("") == []


def test_substitution() -> None:
    args = ["a", "b", "c", "d"]
    assert substitute_template_args("$1-$2-$9", args) == "a-b-"
    assert substitute_template_args("$@ | $ARGUMENTS", args) == "a b c d | a b c d"
    assert substitute_template_args("${@:2} | ${@:2:2} | ${@:0:1} | ${@:9}", args) == (
        "b c d | b c | a | "
    )
    # inserted values are not substituted again
    assert substitute_template_args("$1 $2", ["$2", "x"]) == "$2 x"
    template = PromptTemplate("review", "Review $1 carefully. All args: $@")
    assert format_prompt_template_invocation(template, ["src/app.ts", "--strict"]) == (
        "Review src/app.ts carefully. All args: src/app.ts --strict"
    )
    assert format_prompt_template_invocation(template, "'my file.py'") == (
        "Review my file.py carefully. All args: my file.py"
    )


def test_resources_container(tmp_path: Path) -> None:
    write(tmp_path / "skills" / "demo" / "SKILL.md", skill_file("demo"))
    write(tmp_path / "prompts" / "fix.md", "Fix $1")
    resources = Resources.load([tmp_path / "skills"], [tmp_path / "prompts", tmp_path / "x"])
    assert resources.get_skill("demo") is not None and resources.get_skill("nope") is None
    template = resources.get_prompt_template("fix")
    assert template is not None and template.content == "Fix $1"
    assert len(resources.diagnostics) == 1
    assert Resources() == Resources((), (), ())
