"""Session file records: the header line and the entries, exactly as pi writes them (JSONL v3).

pi 1.6 added ``usage`` and ``context_edit`` entries, system messages in ``message`` entries, and
``systemMessage``/``usage`` on compactions (``usage`` on branch summaries). pi does not validate
entry types: a line of a type this module does not know is read as an :class:`UnknownEntry`,
kept and written back as it was, and contributes nothing to the context (as in pi).

``model_dump(mode="json", by_alias=True, exclude_none=True)`` of any of them gives pi's JSON with
pi's key order (fields are declared in that order; ``parentId`` and a leaf's ``targetId`` stay
``null`` instead of being dropped). Entries are immutable; ids are opaque strings (new ones are
full UUIDv7 strings); entry timestamps are ISO-8601 UTC strings with milliseconds, while messages
inside entries keep their own epoch-millisecond timestamps.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from ..ai.types import Content, PiModel, SystemMessage, Usage, UserContent
from .messages import HarnessMessage
from .stamps import SESSION_VERSION, iso_now, iso_to_ms, new_id

__all__ = [
    "SESSION_VERSION",
    "ActiveToolsChangeEntry",
    "BranchSummaryEntry",
    "CompactionEntry",
    "ContextEditEntry",
    "ContextEditReplacement",
    "CustomEntry",
    "CustomMessageEntry",
    "KnownEntry",
    "LabelEntry",
    "LeafEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "ThinkingLevelChangeEntry",
    "UnknownEntry",
    "UsageEntry",
    "is_system_entry",
    "iso_now",
    "iso_to_ms",
    "new_id",
]


@cache
def _required_nullable(model: type[BaseModel]) -> frozenset[str]:
    """Fields that must be given but may be ``None``: pi writes them as ``null``."""
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if field.is_required() and isinstance(None, _types_of(field.annotation))
    )


def _types_of(annotation: Any) -> tuple[type, ...]:
    return tuple(t for t in get_args(annotation) if isinstance(t, type))


class _Record(PiModel):
    """Base of the header and the entries: frozen, and ``null`` kept where pi writes ``null``
    (``parentId``, a leaf's ``targetId``: the required fields that may be ``None``)."""

    model_config = ConfigDict(frozen=True)
    _null_when_given: ClassVar[frozenset[str]] = frozenset()
    """Optional fields written as ``null`` when the record was read or made with ``null``."""

    @model_serializer(mode="wrap")
    def _keep_nulls(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not info.exclude_none:
            return data
        excluded = info.exclude if isinstance(info.exclude, set | dict) else ()
        nulls = {
            name
            for name in _required_nullable(type(self))
            if getattr(self, name) is None and name not in excluded
        }
        nulls.update(
            name
            for name in self._null_when_given
            if name in self.model_fields_set and getattr(self, name) is None
        )
        if not nulls:
            return data
        out: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            key = (field.alias or name) if info.by_alias else name
            if key in data:
                out[key] = data[key]
            elif name in nulls:
                out[key] = None
        for key, value in data.items():  # extra keys (unknown to this model) go last
            if key not in out:
                out[key] = value
        return out


class SessionHeader(_Record):
    """The first line of a session file. ``parent_session``: the file this one was forked from."""

    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    id: str
    timestamp: str
    cwd: str = ""
    parent_session: str | None = None


class MessageEntry(_Record):
    """A message of the transcript (kept verbatim, with its own epoch-ms timestamp)."""

    type: Literal["message"] = "message"
    id: str
    parent_id: str | None
    timestamp: str
    message: HarnessMessage


def is_system_entry(entry: object) -> bool:
    """Whether ``entry`` is a message entry holding a system message."""
    return type(entry) is MessageEntry and type(entry.message) is SystemMessage


class ThinkingLevelChangeEntry(_Record):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    id: str
    parent_id: str | None
    timestamp: str
    thinking_level: str


class ModelChangeEntry(_Record):
    type: Literal["model_change"] = "model_change"
    id: str
    parent_id: str | None
    timestamp: str
    provider: str
    model_id: str


class ActiveToolsChangeEntry(_Record):
    """Which tools are active from here on (written by pi's harness, not by pi-coding-agent)."""

    type: Literal["active_tools_change"] = "active_tools_change"
    id: str
    parent_id: str | None
    timestamp: str
    active_tool_names: list[str]


class CompactionEntry(_Record):
    """History before ``first_kept_entry_id`` is replaced by ``summary`` in the context.

    ``first_kept_entry_id == id`` keeps nothing before the compaction (pi 1.6 "retain-none");
    ``system_message`` is the replayed system prompt and tools at that point (pi 1.6), which
    leads the context after the compaction; ``usage`` is what summarising cost.
    """

    type: Literal["compaction"] = "compaction"
    id: str
    parent_id: str | None
    timestamp: str
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None
    system_message: SystemMessage | None = None


class BranchSummaryEntry(_Record):
    """A summary of the branch left behind; ``from_id`` is where it branched (or ``"root"``)."""

    type: Literal["branch_summary"] = "branch_summary"
    id: str
    parent_id: str | None
    timestamp: str
    from_id: str
    summary: str
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None


class CustomEntry(_Record):
    """Extension state; never part of the context. (pi writes ``customType`` before ``id``.)"""

    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None
    id: str
    parent_id: str | None
    timestamp: str


class CustomMessageEntry(_Record):
    """Extension content that enters the context as a ``custom`` message."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[UserContent]
    display: bool
    details: Any = None
    id: str
    parent_id: str | None
    timestamp: str


class LabelEntry(_Record):
    """Sets (or, with no/empty ``label``, clears) the label of ``target_id``."""

    type: Literal["label"] = "label"
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    label: str | None = None


class SessionInfoEntry(_Record):
    """Session metadata: the display ``name`` (trimmed; empty clears it)."""

    type: Literal["session_info"] = "session_info"
    id: str
    parent_id: str | None
    timestamp: str
    name: str | None = None


class UsageEntry(_Record):
    """pi 1.6: tokens spent outside the transcript (``kind`` e.g. ``"cache_warm"``). Adds no
    context message; counts in the session's usage totals."""

    type: Literal["usage"] = "usage"
    id: str
    parent_id: str | None
    timestamp: str
    kind: str
    provider: str
    model: str
    usage: Usage
    note: str | None = None


class ContextEditReplacement(PiModel):
    """The content a :class:`ContextEditEntry` puts in place of a message's."""

    content: str | list[Content]


class ContextEditEntry(_Record):
    """pi 1.6: hides (``replacement`` ``None``) or replaces the content of the message entry
    ``target_id`` in future contexts on this branch; the raw history is untouched. Among the
    edits on the path to the leaf, the latest one of a target wins."""

    type: Literal["context_edit"] = "context_edit"
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    replacement: ContextEditReplacement | None


class UnknownEntry(_Record):
    """An entry of a type this version does not know (a newer pi's): kept, written back with all
    its fields, part of the tree, never part of the context."""

    _null_when_given: ClassVar[frozenset[str]] = frozenset({"parent_id", "timestamp"})

    type: str
    id: str
    parent_id: str | None = None
    timestamp: str | None = None


class LeafEntry(_Record):
    """A leaf move (pi's harness): from here on the current position is ``target_id``.

    Its ``parent_id`` is the previous leaf; ``target_id`` ``None`` means "before the first entry".
    """

    type: Literal["leaf"] = "leaf"
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str | None


KnownEntry: TypeAlias = Annotated[
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | ActiveToolsChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | UsageEntry
    | ContextEditEntry
    | LeafEntry,
    Field(discriminator="type"),
]
"""An entry line of a type this version knows (discriminator ``type``)."""

SessionEntry: TypeAlias = KnownEntry | UnknownEntry
"""Any entry a session holds: the known kinds, and unknown ones kept as they were."""
