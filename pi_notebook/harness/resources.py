"""Skills and prompt templates: Markdown files with YAML frontmatter, loaded from directories.

A **skill** is a set of instructions the model reads when a task matches its description
(``SKILL.md`` in a directory of its own, or any ``*.md`` directly in a skills directory). The
app lists them in the system prompt (:func:`format_skills_for_system_prompt`) and the user can
invoke one explicitly (``AgentHarness.skill``). A **prompt template** is a reusable prompt with
``$1``, ``$@``, ``$ARGUMENTS``, ``${@:N}`` and ``${@:N:L}`` placeholders
(``AgentHarness.prompt_from_template``).

Loading never raises for bad files: problems become :class:`ResourceDiagnostic` entries.
PyYAML and pathspec are imported when the first frontmatter or ignore file is read, not with
the harness (``%load_ext`` stays light).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .prompts import SKILLS_PREAMBLE

if TYPE_CHECKING:
    import pathspec
    import yaml

__all__ = [
    "FrontmatterError",
    "PromptTemplate",
    "ResourceDiagnostic",
    "Resources",
    "Skill",
    "format_prompt_template_invocation",
    "format_skill_invocation",
    "format_skills_for_system_prompt",
    "load_prompt_templates",
    "load_skills",
    "parse_frontmatter",
    "parse_template_args",
    "substitute_template_args",
]

MAX_SKILL_NAME_LENGTH = 64
MAX_SKILL_DESCRIPTION_LENGTH = 1024
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


# --- data ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill: ``content`` is the Markdown body (frontmatter removed), ``file_path`` its file.

    ``disable_model_invocation`` keeps it out of the model-visible listing (explicit use only).
    """

    name: str
    description: str
    content: str
    file_path: str
    disable_model_invocation: bool = False

    @property
    def base_dir(self) -> str:
        """The directory the skill's relative references resolve against."""
        return os.path.dirname(self.file_path)


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A prompt template: ``content`` with argument placeholders, named after its file."""

    name: str
    content: str
    description: str | None = None
    file_path: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceDiagnostic:
    """A problem found while loading (never fatal): ``warning`` or a name ``collision``."""

    path: str
    message: str
    type: Literal["warning", "collision"] = "warning"


@dataclass(frozen=True, slots=True)
class Resources:
    """The skills and prompt templates a harness offers, with what loading them reported."""

    skills: tuple[Skill, ...] = ()
    prompt_templates: tuple[PromptTemplate, ...] = ()
    diagnostics: tuple[ResourceDiagnostic, ...] = field(default=(), compare=False)

    @classmethod
    def load(
        cls,
        skill_dirs: Iterable[str | os.PathLike[str]] = (),
        prompt_template_paths: Iterable[str | os.PathLike[str]] = (),
    ) -> Resources:
        """Skills from ``skill_dirs`` and templates from ``prompt_template_paths`` (see
        :func:`load_skills`, :func:`load_prompt_templates`)."""
        skills, skill_problems = load_skills(skill_dirs)
        templates, template_problems = load_prompt_templates(prompt_template_paths)
        return cls(tuple(skills), tuple(templates), (*skill_problems, *template_problems))

    def get_skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def get_prompt_template(self, name: str) -> PromptTemplate | None:
        return next((t for t in self.prompt_templates if t.name == name), None)


# --- frontmatter ---------------------------------------------------------------------------------


class FrontmatterError(ValueError):
    """Frontmatter that is not valid YAML, or not a mapping of keys to values."""


@functools.cache
def _frontmatter_loader() -> type[yaml.SafeLoader]:
    """PyYAML's safe loader read as YAML 1.2 (as pi's ``yaml`` package reads it): only
    ``true``/``false`` are booleans (``yes``, ``on`` stay text) and dates stay text. Made with
    the first frontmatter read: PyYAML is imported then, not with the harness."""
    import yaml

    class FrontmatterLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            """A mapping whose keys are unique (PyYAML would keep the last of a repeated key)."""
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, Hashable):
                    break  # PyYAML's own error follows
                if key in seen:
                    mark = key_node.start_mark
                    raise yaml.MarkedYAMLError(problem=f"duplicate key {key!r}", problem_mark=mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    FrontmatterLoader.yaml_implicit_resolvers = {
        first: [(tag, regex) for tag, regex in resolvers if tag not in (_BOOL_TAG, _TIMESTAMP_TAG)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    FrontmatterLoader.add_implicit_resolver(
        _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return FrontmatterLoader


_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split a Markdown file into its YAML frontmatter (between ``---`` lines) and its body.

    The body is trimmed. Without frontmatter the mapping is empty. Raises ``FrontmatterError``
    (with the file's line and column) when the frontmatter is not YAML or not a mapping.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith("---"):
        return {}, text.strip()
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text.strip()
    import yaml

    try:
        data = yaml.load(text[4:end], Loader=_frontmatter_loader())  # a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 2}, column {mark.column + 1})" if mark else ""
        problem = " ".join(part for part in (exc.problem, exc.context) if part)
        raise FrontmatterError(f"invalid YAML: {problem}{where}") from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML: {exc}") from None
    if data is None:
        return {}, text[end + 4 :].strip()
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter must be a mapping of keys to values")
    return data, text[end + 4 :].strip()


# --- ignore files --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _IgnoreFile:
    """The ``.gitignore``-style rules of one directory, which apply below it."""

    base: str  # the directory, relative to the scanned root ("" or "sub/")
    spec: pathspec.GitIgnoreSpec


def _read_ignore_files(directory: str, base: str) -> list[_IgnoreFile]:
    lines: list[str] = []
    for name in IGNORE_FILE_NAMES:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            lines += Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
    if not lines:
        return []
    import pathspec  # with the first ignore file read, not with the harness

    return [_IgnoreFile(base, pathspec.GitIgnoreSpec.from_lines(lines))]


def _ignored(files: Sequence[_IgnoreFile], path: str, is_dir: bool) -> bool:
    """Whether ``path`` (relative to the root) is ignored: the last rule that matches decides,
    a deeper directory's rules after its parents'."""
    ignored = False
    for rules in files:
        if path.startswith(rules.base):
            relative = path[len(rules.base) :] + ("/" if is_dir else "")
            verdict = rules.spec.check_file(relative).include
            if verdict is not None:
                ignored = verdict
    return ignored


# --- skills --------------------------------------------------------------------------------------


def _name_problems(name: str, parent: str) -> list[str]:
    problems = []
    if name != parent:
        problems.append(f'name "{name}" does not match parent directory "{parent}"')
    if len(name) > MAX_SKILL_NAME_LENGTH:
        problems.append(f"name exceeds {MAX_SKILL_NAME_LENGTH} characters ({len(name)})")
    if not re.fullmatch(r"[a-z0-9-]+", name):
        problems.append(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)"
        )
    if name.startswith("-") or name.endswith("-"):
        problems.append("name must not start or end with a hyphen")
    if "--" in name:
        problems.append("name must not contain consecutive hyphens")
    return problems


def _load_skill_file(path: str) -> tuple[Skill | None, list[ResourceDiagnostic]]:
    try:
        frontmatter, body = parse_frontmatter(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
        return None, [ResourceDiagnostic(path, f"failed to load skill: {exc}")]
    problems: list[str] = []
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is required")
        description = None
    elif len(description) > MAX_SKILL_DESCRIPTION_LENGTH:
        problems.append(
            f"description exceeds {MAX_SKILL_DESCRIPTION_LENGTH} characters ({len(description)})"
        )
    parent = os.path.basename(os.path.dirname(path))
    name = frontmatter.get("name")
    if not isinstance(name, str) or not name:
        name = parent
    problems.extend(_name_problems(name, parent))
    diagnostics = [ResourceDiagnostic(path, problem) for problem in problems]
    if description is None:
        return None, diagnostics
    skill = Skill(
        name=name,
        description=description,
        content=body,
        file_path=path,
        disable_model_invocation=frontmatter.get("disable-model-invocation") is True,
    )
    return skill, diagnostics


class _SkillScan:
    def __init__(self, root: str) -> None:
        self.root = root
        self.skills: list[Skill] = []
        self.diagnostics: list[ResourceDiagnostic] = []
        self.visited: set[str] = set()

    def _add(self, path: str) -> None:
        skill, diagnostics = _load_skill_file(path)
        self.diagnostics.extend(diagnostics)
        if skill is not None:
            self.skills.append(skill)

    def scan(self, directory: str, rules: list[_IgnoreFile], top: bool) -> None:
        real = os.path.realpath(directory)
        if real in self.visited:  # a symlink loop
            return
        self.visited.add(real)
        relative = os.path.relpath(directory, self.root)
        base = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        rules = rules + _read_ignore_files(directory, base)
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            self.diagnostics.append(ResourceDiagnostic(directory, f"cannot list: {exc}"))
            return
        if "SKILL.md" in names and os.path.isfile(os.path.join(directory, "SKILL.md")):
            if not _ignored(rules, base + "SKILL.md", False):
                self._add(os.path.join(directory, "SKILL.md"))
            return  # a skill root: nothing below it is another skill
        for name in names:
            if name.startswith(".") or name == "node_modules":
                continue
            path = os.path.join(directory, name)
            is_dir = os.path.isdir(path)
            if _ignored(rules, base + name, is_dir):
                continue
            if is_dir:
                self.scan(path, rules, top=False)
            elif top and name.endswith(".md") and os.path.isfile(path):
                self._add(path)


def load_skills(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[Skill], list[ResourceDiagnostic]]:
    """Load the skills under each path (a directory, or a single ``.md`` file).

    In a directory, a ``SKILL.md`` makes it a skill root (nothing below is searched); otherwise
    its subdirectories are searched (sorted, dot-entries and ``node_modules`` skipped) and, at the
    top level only, every other ``*.md`` file is a skill too. ``.gitignore``, ``.ignore`` and
    ``.fdignore`` files are honoured. The frontmatter gives ``name`` (default: the parent
    directory's name), ``description`` (required: a skill without one is skipped) and
    ``disable-model-invocation``. When two skills share a name the first one wins.
    """
    skills: list[Skill] = []
    diagnostics: list[ResourceDiagnostic] = []
    by_name: dict[str, Skill] = {}
    seen_files: set[str] = set()
    for given in paths:
        path = os.path.expanduser(os.fspath(given))
        if os.path.isdir(path):
            scan = _SkillScan(path)
            scan.scan(path, [], top=True)
            found, problems = scan.skills, scan.diagnostics
        elif os.path.isfile(path) and path.endswith(".md"):
            skill, problems = _load_skill_file(path)
            found = [] if skill is None else [skill]
        elif os.path.exists(path):
            diagnostics.append(ResourceDiagnostic(path, "skill path is not a markdown file"))
            continue
        else:
            diagnostics.append(ResourceDiagnostic(path, "skill path does not exist"))
            continue
        diagnostics.extend(problems)
        for skill in found:
            real = os.path.realpath(skill.file_path)
            if real in seen_files:
                continue
            winner = by_name.get(skill.name)
            if winner is not None:
                message = f'name "{skill.name}" collision (kept {winner.file_path})'
                diagnostics.append(ResourceDiagnostic(skill.file_path, message, "collision"))
                continue
            by_name[skill.name] = skill
            seen_files.add(real)
            skills.append(skill)
    return skills, diagnostics


def _escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_system_prompt(skills: Iterable[Skill]) -> str:
    """The model-visible skill listing for a system prompt ("" when no skill is visible)."""
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    lines = [SKILLS_PREAMBLE, "", "<available_skills>"]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{_escape_xml(skill.name)}</name>",
            f"    <description>{_escape_xml(skill.description)}</description>",
            f"    <location>{_escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def format_skill_invocation(skill: Skill, additional_instructions: str | None = None) -> str:
    """The user message that invokes ``skill`` explicitly (``AgentHarness.skill``)."""
    block = (
        f'<skill name="{skill.name}" location="{skill.file_path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{skill.content}\n</skill>"
    )
    return f"{block}\n\n{additional_instructions}" if additional_instructions else block


# --- prompt templates ----------------------------------------------------------------------------


def _load_template_file(path: str) -> tuple[PromptTemplate | None, list[ResourceDiagnostic]]:
    try:
        frontmatter, body = parse_frontmatter(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
        return None, [ResourceDiagnostic(path, f"failed to load prompt template: {exc}")]
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        first = next((line for line in body.split("\n") if line.strip()), None)
        description = None if first is None else first[:60] + ("..." if len(first) > 60 else "")
    name = os.path.basename(path)[: -len(".md")]
    return PromptTemplate(name, body, description, path), []


def load_prompt_templates(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[PromptTemplate], list[ResourceDiagnostic]]:
    """Load prompt templates: the ``*.md`` files directly in each directory (sorted, not
    recursive), or the given ``.md`` files. The name is the file name without ``.md``; the
    description the frontmatter's, else the body's first non-empty line (cut to 60 characters).
    When two templates share a name the first one wins."""
    templates: list[PromptTemplate] = []
    diagnostics: list[ResourceDiagnostic] = []
    names: dict[str, PromptTemplate] = {}
    for given in paths:
        path = os.path.expanduser(os.fspath(given))
        if os.path.isdir(path):
            files = [
                os.path.join(path, name)
                for name in sorted(os.listdir(path))
                if name.endswith(".md") and os.path.isfile(os.path.join(path, name))
            ]
        elif os.path.isfile(path) and path.endswith(".md"):
            files = [path]
        else:
            message = "not a markdown file" if os.path.exists(path) else "does not exist"
            diagnostics.append(ResourceDiagnostic(path, f"prompt template path {message}"))
            continue
        for file in files:
            template, problems = _load_template_file(file)
            diagnostics.extend(problems)
            if template is None:
                continue
            winner = names.get(template.name)
            if winner is not None:
                message = f'name "{template.name}" collision (kept {winner.file_path})'
                diagnostics.append(ResourceDiagnostic(file, message, "collision"))
                continue
            names[template.name] = template
            templates.append(template)
    return templates, diagnostics


def parse_template_args(text: str) -> list[str]:
    """Split an argument string as pi does: spaces and tabs separate, single or double quotes
    group (no escapes; the quotes are dropped, and an empty quoted string gives no argument)."""
    args: list[str] = []
    current = ""
    quote = ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in "'\"":
            quote = char
        elif char in " \t":
            if current:
                args.append(current)
            current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


_PLACEHOLDER = re.compile(r"\$\{@:(\d+)(?::(\d+))?\}|\$(ARGUMENTS|@|\d+)")


def substitute_template_args(content: str, args: Sequence[str]) -> str:
    """Fill a template's placeholders: ``$N`` (N-th argument, "" if missing), ``$@`` and
    ``$ARGUMENTS`` (all, space-separated), ``${@:N}`` (from the N-th on) and ``${@:N:L}`` (``L``
    of them from the N-th). Inserted arguments are not substituted again."""
    joined = " ".join(args)

    def replace(match: re.Match[str]) -> str:
        start, length, simple = match.groups()
        if start is not None:
            first = max(int(start) - 1, 0)
            chosen = args[first:] if length is None else args[first : first + int(length)]
            return " ".join(chosen)
        if simple in ("ARGUMENTS", "@"):
            return joined
        index = int(simple) - 1
        return args[index] if 0 <= index < len(args) else ""

    return _PLACEHOLDER.sub(replace, content)


def format_prompt_template_invocation(
    template: PromptTemplate, args: Sequence[str] | str = ()
) -> str:
    """The prompt of a template invocation; ``args`` as a list, or a string to split
    (:func:`parse_template_args`)."""
    if isinstance(args, str):
        args = parse_template_args(args)
    return substitute_template_args(template.content, list(args))
