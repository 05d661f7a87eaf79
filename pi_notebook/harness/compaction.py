"""Compaction: replace the old part of a branch by a structured summary (pi's algorithm).

``prepare_compaction(path, settings)`` decides where to cut: walking back from the newest
message it keeps about ``keep_recent_tokens`` of recent history, never starting the kept part
at a tool result (it must follow its call). A cut inside a turn *splits* it: the turn's start is
summarised separately so the kept rest still makes sense. ``compact(preparation, model, …)``
asks the model for the summary (both summaries of a split turn in parallel), updates the
previous compaction's summary instead of starting afresh, and appends the files the summarised
part read and modified. Nothing is written here: the caller appends the result as a
``compaction`` entry, and :meth:`Session.build_context` then shows the summary in place of
everything before ``first_kept_entry_id``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..agent.loop import default_stream_fn
from ..agent.types import StreamFn
from ..ai.abort import AbortSignal
from ..ai.options import StreamOptions
from ..ai.types import (
    AssistantMessage,
    Context,
    Message,
    Model,
    PiModel,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .entries import (
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    iso_to_ms,
)
from .messages import (
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    HarnessMessage,
    convert_to_llm,
)
from .projection import ProjectedEntry, entry_messages, project_branch
from .prompts import (
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_SYSTEM_PROMPT,
    history_summary_prompt,
    turn_prefix_summary_prompt,
)
from .tokens import (
    estimate_projected_context_tokens,
    estimate_text_tokens,
    estimate_tokens,
    js_json_stringify,
)

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "CompactionError",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CutPoint",
    "FileOperations",
    "build_context_messages",
    "compact",
    "complete_summary",
    "entry_to_message",
    "find_cut_point",
    "find_turn_start_index",
    "fit_to_window",
    "format_file_operations",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
]

TOOL_RESULT_MAX_CHARS = 2000
"""Tool results are cut to this many characters in a summarisation request."""


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """When and how much to compact.

    ``reserve_tokens``: room kept free for the summary and the next reply; automatic compaction
    starts when the context exceeds ``context_window - reserve_tokens``, and summaries may use up
    to 80% of it. ``keep_recent_tokens``: how much recent history stays verbatim.
    """

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000

    def __post_init__(self) -> None:
        for name in ("reserve_tokens", "keep_recent_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, not {value!r}")


class CompactionError(Exception):
    """A compaction that could not be produced.

    ``code``: ``aborted`` (the signal fired), ``summarization_failed`` (the model call failed)
    or ``invalid_session`` (the branch cannot be compacted).
    """

    def __init__(
        self,
        code: Literal["aborted", "summarization_failed", "invalid_session"],
        message: str,
    ) -> None:
        super().__init__(message)
        self.code = code


class CompactionResult(PiModel):
    """A generated (or hook-provided) compaction, ready to become a ``compaction`` entry.

    ``details`` of generated ones: ``{"readFiles": [...], "modifiedFiles": [...]}``.
    """

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None


# --- file operations -----------------------------------------------------------------------------


@dataclass(slots=True)
class FileOperations:
    """Paths the summarised part read, wrote and edited (from ``read``/``write``/``edit`` calls)."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def add_message(self, message: object) -> None:
        """Record the file tool calls of an assistant reply (other messages are ignored)."""
        if not isinstance(message, AssistantMessage):
            return
        for block in message.content:
            if not isinstance(block, ToolCall):
                continue
            path = block.arguments.get("path")
            if not isinstance(path, str) or not path:
                continue
            if block.name == "read":
                self.read.add(path)
            elif block.name == "write":
                self.written.add(path)
            elif block.name == "edit":
                self.edited.add(path)

    def add_details(self, details: Any) -> None:
        """Take over the lists of an earlier summary's ``details`` (pi's shape)."""
        if not isinstance(details, dict):
            return
        read, modified = details.get("readFiles"), details.get("modifiedFiles")
        if isinstance(read, list):
            self.read.update(p for p in read if isinstance(p, str))
        if isinstance(modified, list):
            self.edited.update(p for p in modified if isinstance(p, str))

    def file_lists(self) -> tuple[list[str], list[str]]:
        """``(read_files, modified_files)``: files only read; files written or edited. Sorted."""
        modified = self.written | self.edited
        return sorted(self.read - modified), sorted(modified)

    def details(self) -> dict[str, list[str]]:
        read, modified = self.file_lists()
        return {"readFiles": read, "modifiedFiles": modified}


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """The ``<read-files>``/``<modified-files>`` blocks appended to a summary ("" if none)."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


# --- serialising a conversation for the summariser -----------------------------------------------


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n[... {len(text) - limit} more characters truncated]"


def _text_of(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def serialize_conversation(messages: Iterable[Message]) -> str:
    """LLM messages as plain text the summariser reads instead of continuing them.

    One block per part, separated by blank lines: ``[User]: …``, ``[Assistant thinking]: …``,
    ``[Assistant]: …``, ``[Assistant tool calls]: name(key=<json>, …); …`` and
    ``[Tool result]: …`` (cut to 2000 characters). Images are left out.
    """
    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            text = _text_of(message.content)
            if text:
                parts.append(f"[User]: {text}")
        elif isinstance(message, AssistantMessage):
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[str] = []
            for block in message.content:
                if isinstance(block, TextContent):
                    texts.append(block.text)
                elif isinstance(block, ThinkingContent):
                    thinking.append(block.thinking)
                elif isinstance(block, ToolCall):
                    args = ", ".join(
                        f"{key}={js_json_stringify(value)}"
                        for key, value in block.arguments.items()
                    )
                    calls.append(f"{block.name}({args})")
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif isinstance(message, ToolResultMessage):
            text = _text_of(message.content)
            if text:
                parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


# --- entries as messages -------------------------------------------------------------------------


def _ms(timestamp: str) -> int:
    try:
        return iso_to_ms(timestamp)
    except ValueError:
        return 0


def entry_to_message(entry: SessionEntry) -> HarnessMessage | None:
    """The message an entry stands for in a summarisation request (``None``: no message).

    Messages are themselves; custom messages, branch summaries and compactions become
    ``custom``, ``branchSummary`` and ``compactionSummary`` messages.
    """
    if isinstance(entry, MessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        return CustomMessage(
            custom_type=entry.custom_type,
            content=entry.content,
            display=entry.display,
            details=entry.details,
            timestamp=_ms(entry.timestamp),
        )
    if isinstance(entry, BranchSummaryEntry):
        return BranchSummaryMessage(
            summary=entry.summary, from_id=entry.from_id, timestamp=_ms(entry.timestamp)
        )
    if isinstance(entry, CompactionEntry):
        return CompactionSummaryMessage(
            summary=entry.summary, tokens_before=entry.tokens_before, timestamp=_ms(entry.timestamp)
        )
    return None


def _context_messages(entries: Iterable[SessionEntry]) -> list[HarnessMessage]:
    out: list[HarnessMessage] = []
    for entry in entries:
        if isinstance(entry, MessageEntry | CustomMessageEntry) or (
            isinstance(entry, BranchSummaryEntry) and entry.summary
        ):
            message = entry_to_message(entry)
            if message is not None:
                out.append(message)
    return out


def build_context_messages(path: Sequence[SessionEntry]) -> list[HarnessMessage]:
    """The context messages of a root → leaf path (the messages of ``Session.build_context``)."""
    last = next(
        (i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), -1
    )
    if last < 0:
        return _context_messages(path)
    compaction = path[last]
    assert isinstance(compaction, CompactionEntry)
    first = next((i for i in range(last) if path[i].id == compaction.first_kept_entry_id), last)
    summary = entry_to_message(compaction)
    assert summary is not None
    return [
        summary,
        *_context_messages(path[first:last]),
        *_context_messages(path[last + 1 :]),
    ]


# --- the cut point -------------------------------------------------------------------------------

_CUT_ROLES = frozenset(
    {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
_TURN_START_ROLES = frozenset(
    {"user", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)


def _projected(
    entries: Sequence[SessionEntry] | Sequence[ProjectedEntry],
) -> list[ProjectedEntry]:
    """Entries as a projection: given raw entries stand for themselves (no edit applied)."""
    return [
        e if isinstance(e, ProjectedEntry) else ProjectedEntry(e, entry_messages(e))
        for e in entries
    ]


def _is_cut_point(entry: ProjectedEntry) -> bool:
    return not isinstance(entry.entry, CompactionEntry) and any(
        m.role in _CUT_ROLES for m in entry.messages
    )


def _starts_turn(entry: ProjectedEntry) -> bool:
    return not isinstance(entry.entry, CompactionEntry) and any(
        m.role in _TURN_START_ROLES for m in entry.messages
    )


def find_turn_start_index(
    entries: Sequence[SessionEntry] | Sequence[ProjectedEntry], index: int, start: int
) -> int:
    """Index of the entry that began the turn containing ``entries[index]`` (a user message, a
    shell run, a custom message or a branch summary), searching back to ``start``; -1 if
    none."""
    projected = _projected(entries)
    return next((i for i in range(index, start - 1, -1) if _starts_turn(projected[i])), -1)


@dataclass(frozen=True, slots=True)
class CutPoint:
    """Where to cut: the first kept entry, and the start of the turn the cut splits (-1: none)."""

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def _intrinsically_visible(entry: ProjectedEntry) -> bool:
    return not isinstance(entry.entry, ContextEditEntry) and bool(entry_messages(entry.entry))


def find_cut_point(
    entries: Sequence[SessionEntry] | Sequence[ProjectedEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
) -> CutPoint:
    """Keep about ``keep_recent_tokens`` of the newest messages of ``entries[start:end]`` (a
    projection, :func:`~pi_notebook.harness.projection.project_branch`, or raw entries that
    stand for themselves): pi 1.6's ``findProjectedCutPoint``.

    Walking back from the newest entry, the cut goes to the first valid cut point (an entry
    with a user, assistant, shell, custom or summary message — never a tool result) at or after
    the entry where the sum reaches the budget (the first valid cut point if it never does).
    When everything after the cut is a failed attempt that context edits hid (pi's overflow
    recovery), the cut moves past it. Then it moves back over entries that contribute nothing
    (settings, edits). A kept part that does not begin a turn splits the turn it is in.
    """
    projected = _projected(entries)
    cuts = [i for i in range(start, end) if _is_cut_point(projected[i])]
    if not cuts:
        return CutPoint(start, -1, False)
    cut = cuts[0]
    total = 0
    exceeded = False
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m) for m in projected[i].messages)
        if tokens == 0:
            continue
        total += tokens
        if total >= keep_recent_tokens:
            exceeded = True
            cut = next((c for c in cuts if c >= i), cuts[-1])
            break
    suffix = projected[cut + 1 : end]
    omitted = {e.entry.id for e in suffix if _intrinsically_visible(e) and not e.messages}
    replaced_elsewhere = any(
        isinstance(e.entry, ContextEditEntry)
        and e.entry.replacement is not None
        and e.entry.target_id not in omitted
        for e in suffix
    )
    recovery_suffix = (
        exceeded
        and not replaced_elsewhere
        and any(
            isinstance(e.entry, MessageEntry)
            and isinstance(e.entry.message, AssistantMessage)
            and e.entry.id in omitted
            for e in suffix
        )
        and all(
            not isinstance(e.entry, CompactionEntry)
            and (not _intrinsically_visible(e) or e.entry.id in omitted)
            for e in suffix
        )
    )
    if recovery_suffix:
        cut += 1  # an overflowed attempt hidden for its retry: not worth keeping
    while cut > start:
        previous = projected[cut - 1]
        if isinstance(previous.entry, CompactionEntry) or previous.messages:
            break
        cut -= 1
    if cut < len(projected) and _starts_turn(projected[cut]):
        return CutPoint(cut, -1, False)
    turn_start = find_turn_start_index(projected, cut, start) if cut < len(projected) else -1
    return CutPoint(cut, turn_start, turn_start != -1)


# --- preparation ---------------------------------------------------------------------------------


@dataclass(slots=True)
class CompactionPreparation:
    """What a compaction will summarise and keep (see :func:`prepare_compaction`).

    ``messages_to_summarize``: history before the kept part (or before the split turn);
    ``turn_prefix_messages``: the split turn's beginning; ``previous_summary``: the summary of
    the compaction this one updates; ``tokens_before``: the branch's context size now.
    """

    first_kept_entry_id: str
    messages_to_summarize: list[HarnessMessage]
    turn_prefix_messages: list[HarnessMessage]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings


def _summary_messages(entries: Iterable[ProjectedEntry]) -> list[HarnessMessage]:
    """Messages to summarise: not the compaction (its summary comes in as the previous summary),
    not system messages (prompt state, not conversation: the compaction keeps their replay)."""
    out: list[HarnessMessage] = []
    for entry in entries:
        if not isinstance(entry.entry, CompactionEntry):
            out.extend(m for m in entry.messages if not isinstance(m, SystemMessage))
    return out


def prepare_compaction(
    path: Sequence[SessionEntry],
    settings: CompactionSettings,
    context: Sequence[object] | None = None,
    *,
    allow_empty: bool = False,
) -> CompactionPreparation | None:
    """Plan the compaction of a root → leaf path (pi 1.6's ``prepareCompaction``, over the
    branch's projection: :mod:`~pi_notebook.harness.projection`); ``None`` when there is nothing
    to compact: an empty path, one that ends with a compaction, or nothing before the kept part
    to summarise. ``allow_empty``: plan one even then, with nothing to summarise, as pi 0.79's
    harness did for an explicit ``compact()`` (its recorded behaviour, kept for that call).

    ``tokens_before`` is pi 1.6's projected estimate of ``context`` (the session's context at the
    leaf; by default the projection's messages).

    After an earlier compaction only what it kept and what followed is considered again, and its
    summary is updated rather than replaced.
    """
    if not path or isinstance(path[-1], CompactionEntry):
        return None
    projected = project_branch(path)
    previous: CompactionEntry | None = None
    start = 0
    head = projected[0].entry if projected else None
    if isinstance(head, CompactionEntry) and projected[0].messages:
        previous = head
        start = 1
    messages = [m for e in projected for m in e.messages] if context is None else context
    tokens_before = estimate_projected_context_tokens(messages, path).tokens
    cut = find_cut_point(projected, start, len(projected), settings.keep_recent_tokens)
    if cut.first_kept_entry_index >= len(projected):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = _summary_messages(projected[start:history_end])
    prefix = (
        _summary_messages(projected[cut.turn_start_index : cut.first_kept_entry_index])
        if cut.is_split_turn
        else []
    )
    if not to_summarize and not prefix and not allow_empty:
        return None
    file_ops = FileOperations()
    if previous is not None and not previous.from_hook:
        file_ops.add_details(previous.details)
    for message in (*to_summarize, *prefix):
        file_ops.add_message(message)
    return CompactionPreparation(
        first_kept_entry_id=projected[cut.first_kept_entry_index].entry.id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=None if previous is None else previous.summary,
        file_ops=file_ops,
        settings=settings,
    )


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """Whether a context of ``context_tokens`` calls for automatic compaction (more than
    ``context_window - reserve_tokens``)."""
    return settings.enabled and context_tokens > context_window - settings.reserve_tokens


def has_projected_context_edit(path: Sequence[SessionEntry]) -> bool:
    """Whether a context edit is among the entries the context at the end of ``path`` is built
    from (after the newest compaction: its kept entries and everything after it)."""
    last = next(
        (i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), -1
    )
    start = 0
    if last >= 0:
        compaction = path[last]
        assert isinstance(compaction, CompactionEntry)
        kept = compaction.first_kept_entry_id
        start = next((i for i in range(last) if path[i].id == kept), last)
    return any(isinstance(entry, ContextEditEntry) for entry in path[start:])


# --- the model calls -----------------------------------------------------------------------------


async def complete_summary(
    model: Model,
    system_prompt: str,
    prompt: str,
    *,
    max_tokens: int,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    signal: AbortSignal | None = None,
    reasoning: ThinkingLevel | None = None,
    stream_fn: StreamFn | None = None,
) -> AssistantMessage:
    """One summarisation request: ``prompt`` as the only user message; the whole reply."""
    context = Context(
        system_prompt=system_prompt,
        messages=[UserMessage(content=[TextContent(text=prompt)])],
    )
    options = StreamOptions(
        api_key=api_key,
        headers=dict(headers) if headers else None,
        signal=signal,
        max_tokens=max_tokens,
        reasoning=None if reasoning == "off" else reasoning,
    )
    produced = (stream_fn or default_stream_fn)(model, context, options)
    stream = await produced if inspect.isawaitable(produced) else produced
    reply = await stream.result()
    if not isinstance(reply, AssistantMessage):
        raise TypeError(f"the stream function produced {type(reply).__name__}, not a reply")
    return reply


def _output_budget(fraction: float, settings: CompactionSettings, model: Model) -> int:
    budget = int(fraction * settings.reserve_tokens)
    return min(budget, model.max_tokens) if model.max_tokens > 0 else budget


def _check_fits(
    model: Model,
    system_prompt: str,
    prompt: str,
    settings: CompactionSettings,
    fraction: float,
    what: str,
) -> None:
    """Refuse a summary request the model's window cannot hold with its reply (pi's estimate,
    ``chars / 4``), before any is sent: a small model given more than its window writes a
    summary of what it could see, or nonsense, and that would replace the conversation."""
    window = model.context_window
    needed = estimate_text_tokens(system_prompt, prompt) + _output_budget(fraction, settings, model)
    if window > 0 and needed > window:
        raise CompactionError(
            "summarization_failed",
            f"{what} skipped: the request needs about {needed:,} tokens, more than "
            f"{model.provider}/{model.id}'s {window:,}-token window; nothing was replaced. "
            "Compact with a model that has a larger window.",
        )


def _summary_text(reply: AssistantMessage, what: str) -> str:
    if reply.stop_reason == "aborted":
        raise CompactionError("aborted", reply.error_message or f"{what} aborted")
    if reply.stop_reason == "error":
        raise CompactionError(
            "summarization_failed", f"{what} failed: {reply.error_message or 'Unknown error'}"
        )
    return "\n".join(b.text for b in reply.content if isinstance(b, TextContent))


_CHARS_PER_TOKEN = 4
_FIT_MARGIN = 0.9
"""Of the window, what a summary request may fill by the four-characters-a-token estimate
(tokenizers differ; a request a little short of the window is safer than one over it)."""


def fit_to_window(conversation: str, context_window: int, max_tokens: int, fixed_chars: int) -> str:
    """``conversation`` cut from its start so that the summary request (``fixed_chars`` of
    instructions around it, and ``max_tokens`` of reply) fits the summarising model's window;
    as it is when it fits. A small model's window may hold less than the history it has to
    summarise: the most recent part is the one kept."""
    room = int(context_window * _FIT_MARGIN) - max_tokens
    limit = max(0, room * _CHARS_PER_TOKEN - fixed_chars)
    if len(conversation) <= limit:
        return conversation
    dropped = len(conversation) - limit
    return f"[... the {dropped:,} characters before this are left out]\n" + conversation[dropped:]


async def compact(
    preparation: CompactionPreparation,
    model: Model,
    *,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    custom_instructions: str | None = None,
    signal: AbortSignal | None = None,
    thinking_level: ThinkingLevel | None = None,
    stream_fn: StreamFn | None = None,
    system_prompt: str = SUMMARIZATION_SYSTEM_PROMPT,
) -> CompactionResult:
    """Summarise a prepared compaction with ``model``.

    The history summary may use ``0.8 × reserve_tokens`` output tokens, a split turn's prefix
    summary ``0.5 ×`` (both capped by the model's limit); the two run concurrently. The
    session's ``thinking_level`` is passed on when the model reasons. Raises
    :class:`CompactionError` if a request fails or is aborted.
    """
    settings = preparation.settings
    reasoning = thinking_level if model.reasoning else None

    async def summarize(prompt: str, fraction: float, what: str) -> str:
        reply = await complete_summary(
            model,
            system_prompt,
            prompt,
            max_tokens=_output_budget(fraction, settings, model),
            api_key=api_key,
            headers=headers,
            signal=signal,
            reasoning=reasoning,
            stream_fn=stream_fn,
        )
        return _summary_text(reply, what)

    def fitted(conversation: str, fraction: float, frame: str) -> str:
        return fit_to_window(
            conversation,
            model.context_window,
            _output_budget(fraction, settings, model),
            len(system_prompt) + len(frame),
        )

    frame = history_summary_prompt("", preparation.previous_summary, custom_instructions)
    history_prompt = history_summary_prompt(
        fitted(
            serialize_conversation(convert_to_llm(preparation.messages_to_summarize)), 0.8, frame
        ),
        preparation.previous_summary,
        custom_instructions,
    )
    split = preparation.is_split_turn and bool(preparation.turn_prefix_messages)
    if not split or preparation.messages_to_summarize:
        _check_fits(model, system_prompt, history_prompt, settings, 0.8, "Summarization")
    if split:
        prefix_prompt = turn_prefix_summary_prompt(
            fitted(
                serialize_conversation(convert_to_llm(preparation.turn_prefix_messages)),
                0.5,
                turn_prefix_summary_prompt(""),
            )
        )
        _check_fits(model, system_prompt, prefix_prompt, settings, 0.5, "Turn prefix summarization")
        history_summary, prefix_summary = await _both(
            summarize(history_prompt, 0.8, "Summarization")
            if preparation.messages_to_summarize
            else _constant(NO_PRIOR_HISTORY),
            summarize(prefix_prompt, 0.5, "Turn prefix summarization"),
        )
        summary = history_summary + SPLIT_TURN_SEPARATOR + prefix_summary
    else:
        summary = await summarize(history_prompt, 0.8, "Summarization")

    read_files, modified_files = preparation.file_ops.file_lists()
    return CompactionResult(
        summary=summary + format_file_operations(read_files, modified_files),
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )


async def _constant(text: str) -> str:
    return text


async def _both(first: Any, second: Any) -> tuple[str, str]:
    """Run two summaries concurrently; if one fails, cancel the other and raise."""
    tasks = [asyncio.ensure_future(first), asyncio.ensure_future(second)]
    try:
        a, b = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return a, b
