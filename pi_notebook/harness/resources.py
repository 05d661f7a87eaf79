"""Skills and prompt templates: Markdown files with YAML frontmatter, loaded from directories.

A **skill** is a set of instructions the model reads when a task matches its description
(``SKILL.md`` in a directory of its own, or any ``*.md`` directly in a skills directory). The
app lists them in the system prompt (:func:`format_skills_for_system_prompt`) and the user can
invoke one explicitly (``AgentHarness.skill``). A **prompt template** is a reusable prompt with
``$1``, ``$@``, ``$ARGUMENTS``, ``${@:N}`` and ``${@:N:L}`` placeholders
(``AgentHarness.prompt_from_template``).

Loading never raises for bad files: problems become :class:`ResourceDiagnostic` entries.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .prompts import SKILLS_PREAMBLE

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
    """Frontmatter that is not the YAML subset this reader understands."""


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split a Markdown file into its YAML frontmatter (between ``---`` lines) and its body.

    The body is trimmed. Without frontmatter the mapping is empty. The reader understands the
    YAML that frontmatter uses: ``key: value`` pairs, plain/quoted scalars, booleans, null and
    numbers, nested mappings, block and flow lists, ``|``/``>`` block scalars and comments.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith("---"):
        return {}, text.strip()
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text.strip()
    data = _YamlReader(text[4:end]).mapping_document()
    return data, text[end + 4 :].strip()


_KEY = re.compile(r"""^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"][^:#]*?)\s*:(?:\s+(.*)|$)""")
_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?$")
_BLOCK_SCALAR = re.compile(r"^([|>])([-+]?)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _strip_comment(value: str) -> str:
    if value.startswith(("'", '"')):
        return value
    match = re.search(r"\s#", value)
    return (value[: match.start()] if match else value).strip()


def _unquote(token: str) -> str:
    if token.startswith('"'):
        if not token.endswith('"') or len(token) < 2:
            raise FrontmatterError(f"unterminated string: {token}")
        body = token[1:-1]
        escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": "\0", "r": "\r"}
        return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(0)), body)
    if not token.endswith("'") or len(token) < 2:
        raise FrontmatterError(f"unterminated string: {token}")
    return token[1:-1].replace("''", "'")


def _scalar(token: str) -> Any:
    token = _strip_comment(token.strip())
    if not token or token in ("~", "null", "Null", "NULL"):
        return None
    if token[0] in "'\"":
        return _unquote(token)
    if token in ("true", "True", "TRUE"):
        return True
    if token in ("false", "False", "FALSE"):
        return False
    if _INT.match(token):
        return int(token.replace("_", ""))
    if _FLOAT.match(token):
        return float(token)
    if token.startswith("[") and token.endswith("]"):
        inner = token[1:-1].strip()
        return [_scalar(item) for item in _split_flow(inner)] if inner else []
    if token == "{}":
        return {}
    return token


def _split_flow(text: str) -> list[str]:
    items, current, quote = [], "", ""
    for char in text:
        if quote:
            current += char
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current += char
        elif char == ",":
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return items


class _YamlReader:
    """A line-based reader for the block YAML of frontmatter (see :func:`parse_frontmatter`)."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.pos = 0

    def mapping_document(self) -> dict[str, Any]:
        self._skip_blank()
        if self.pos >= len(self.lines):
            return {}
        value = self._block(_indent(self.lines[self.pos]))
        self._skip_blank()
        if self.pos < len(self.lines):
            raise FrontmatterError(f"unexpected line: {self.lines[self.pos].strip()}")
        if not isinstance(value, dict):
            raise FrontmatterError("frontmatter must be a mapping of keys to values")
        return value

    def _skip_blank(self) -> None:
        while self.pos < len(self.lines):
            stripped = self.lines[self.pos].strip()
            if stripped and not stripped.startswith("#"):
                return
            self.pos += 1

    def _block(self, indent: int) -> Any:
        line = self.lines[self.pos]
        if line.lstrip().startswith("-") and line.strip()[1:2] in ("", " "):
            return self._sequence(indent)
        return self._mapping(indent)

    def _mapping(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while True:
            self._skip_blank()
            if self.pos >= len(self.lines):
                return out
            line = self.lines[self.pos]
            current = _indent(line)
            if current < indent:
                return out
            if current > indent:
                raise FrontmatterError(f"unexpected indentation: {line.strip()}")
            match = _KEY.match(line.strip())
            if match is None:
                raise FrontmatterError(f"expected 'key: value', got: {line.strip()}")
            key = match.group(1)
            if key[0] in "'\"":
                key = _unquote(key)
            self.pos += 1
            out[key] = self._value(match.group(2) or "", indent)

    def _sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while True:
            self._skip_blank()
            if self.pos >= len(self.lines):
                return items
            line = self.lines[self.pos]
            stripped = line.strip()
            if _indent(line) != indent or not (stripped == "-" or stripped.startswith("- ")):
                return items
            rest = stripped[1:].strip()
            if not rest:
                self.pos += 1
                items.append(self._nested(indent))
            elif _KEY.match(rest) and not rest.startswith(("'", '"', "[")):
                # "- key: value" starts a mapping item, indented past the dash
                self.lines[self.pos] = " " * (indent + 2) + rest
                items.append(self._mapping(indent + 2))
            else:
                self.pos += 1
                items.append(_scalar(rest))

    def _nested(self, indent: int) -> Any:
        self._skip_blank()
        if self.pos >= len(self.lines):
            return None
        line = self.lines[self.pos]
        child = _indent(line)
        is_item = line.strip() == "-" or line.strip().startswith("- ")
        if child > indent or (child == indent and is_item):
            return self._block(child)
        return None

    def _value(self, rest: str, indent: int) -> Any:
        rest = _strip_comment(rest)
        block = _BLOCK_SCALAR.match(rest)
        if block:
            return self._block_scalar(block.group(1), block.group(2), indent)
        if not rest:
            return self._nested(indent)
        return _scalar(rest)

    def _block_scalar(self, style: str, chomp: str, indent: int) -> str:
        raw: list[str] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip() and _indent(line) <= indent:
                break
            raw.append(line)
            self.pos += 1
        while raw and not raw[-1].strip():
            raw.pop()
        content = [line for line in raw if line.strip()]
        cut = min((_indent(line) for line in content), default=0)
        lines = [line[cut:] for line in raw]
        if style == "|":
            text = "\n".join(lines)
        else:
            text = ""
            for line in lines:
                if not line:
                    text += "\n"
                elif text and not text.endswith("\n"):
                    text += " " + line
                else:
                    text += line
        if chomp == "-" or not text:
            return text
        return text + "\n"


# --- ignore files --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    base: str  # the ignore file's directory, relative to the scanned root ("" or "sub/")
    pattern: re.Pattern[str]
    negate: bool
    dir_only: bool

    def matches(self, path: str, is_dir: bool) -> bool:
        if not path.startswith(self.base) or (self.dir_only and not is_dir):
            return False
        return self.pattern.fullmatch(path[len(self.base) :]) is not None


def _glob_to_regex(glob: str) -> str:
    out, i = "", 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        if glob.startswith("**", i):
            out += ".*"
            i += 2
            continue
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "\\" and i + 1 < len(glob):
            i += 1
            out += re.escape(glob[i])
        elif char == "[":
            close = glob.find("]", i + 2)
            if close < 0:
                out += re.escape(char)
            else:
                body = glob[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out += "[" + body.replace("\\", "\\\\") + "]"
                i = close
        else:
            out += re.escape(char)
        i += 1
    return out


def _ignore_rule(line: str, base: str) -> _IgnoreRule | None:
    """One line of a ``.gitignore``-style file, re-rooted at ``base``."""
    line = line.rstrip("\n")
    stripped = re.sub(r"(?<!\\)\s+$", "", line)
    if not stripped or stripped.startswith("#"):
        return None
    negate = stripped.startswith("!")
    if negate or stripped.startswith(("\\!", "\\#")):
        stripped = stripped[1:]
    dir_only = stripped.endswith("/")
    stripped = stripped.rstrip("/")
    if not stripped:
        return None
    anchored = "/" in stripped
    stripped = stripped.lstrip("/")
    regex = _glob_to_regex(stripped)
    if not anchored:
        regex = "(?:.*/)?" + regex
    return _IgnoreRule(base, re.compile(regex + "(?:/.*)?"), negate, dir_only)


def _read_ignore_rules(directory: str, base: str) -> list[_IgnoreRule]:
    rules: list[_IgnoreRule] = []
    for name in IGNORE_FILE_NAMES:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            rule = _ignore_rule(line, base)
            if rule is not None:
                rules.append(rule)
    return rules


def _ignored(rules: Sequence[_IgnoreRule], path: str, is_dir: bool) -> bool:
    ignored = False
    for rule in rules:
        if rule.matches(path, is_dir):
            ignored = not rule.negate
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

    def scan(self, directory: str, rules: list[_IgnoreRule], top: bool) -> None:
        real = os.path.realpath(directory)
        if real in self.visited:  # a symlink loop
            return
        self.visited.add(real)
        relative = os.path.relpath(directory, self.root)
        base = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        rules = rules + _read_ignore_rules(directory, base)
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
