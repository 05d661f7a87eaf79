"""Moving the session leaf within the tree, as the harness does it: the ``session_before_tree``
hook, an optional summary of the branch left behind, and the entries and event that record the
move."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..ai.abort import AbortSignal
from ..ai.types import TextContent, UserMessage
from .branch_summary import (
    BranchSummaryError,
    collect_entries_for_branch_summary,
    generate_branch_summary,
)
from .configuration import HarnessParts
from .entries import BranchSummaryEntry, CustomMessageEntry, LeafEntry, MessageEntry
from .harness_events import SessionTreeEvent
from .hooks import (
    AgentHarnessError,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
    TreePreparation,
    as_harness_error,
)

__all__ = ["NavigateTreeResult", "TreeMove", "text_of"]


@dataclass(frozen=True, slots=True)
class NavigateTreeResult:
    """The outcome of ``navigate_tree``: ``cancelled`` (by a hook, or the summary was aborted),
    ``editor_text`` (the text of the user or custom message navigated to, for re-editing) and
    the ``branch_summary`` entry written, if any."""

    cancelled: bool = False
    editor_text: str | None = None
    summary_entry: BranchSummaryEntry | None = None


@dataclass(frozen=True, slots=True)
class TreeMove:
    """What ``navigate_tree`` was asked for."""

    target_id: str
    summarize: bool
    custom_instructions: str | None
    replace_instructions: bool
    label: str | None


def text_of(content: str | Sequence[Any]) -> str:
    """The text of a message's content (its text blocks joined)."""
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


async def navigate(move: TreeMove, parts: HarnessParts, signal: AbortSignal) -> NavigateTreeResult:
    """Move the leaf as ``move`` says (see ``AgentHarness.navigate_tree``)."""
    config, writer, hooks, emit = parts.config, parts.writer, parts.hooks, parts.emit
    session = writer.session
    target_id = move.target_id
    old_leaf = session.leaf_id
    if old_leaf == target_id:
        return NavigateTreeResult()
    target = session.get_entry(target_id)
    if target is None or isinstance(target, LeafEntry):
        raise AgentHarnessError("invalid_argument", f"Entry {target_id} not found")
    collected = collect_entries_for_branch_summary(session, old_leaf, target_id)
    custom_instructions = move.custom_instructions
    replace_instructions = move.replace_instructions
    label = move.label
    preparation = TreePreparation(
        target_id=target_id,
        old_leaf_id=old_leaf,
        common_ancestor_id=collected.common_ancestor_id,
        entries_to_summarize=collected.entries,
        user_wants_summary=move.summarize,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        label=label,
    )
    event = SessionBeforeTreeEvent(preparation, signal)
    hook = await hooks.run("session_before_tree", event, SessionBeforeTreeResult)
    if hook is not None and hook.cancel:
        return NavigateTreeResult(cancelled=True)
    summary_text: str | None = None
    details: Any = None
    from_hook = hook is not None and hook.summary is not None
    if hook is not None:
        if hook.summary is not None:
            summary_text, details = hook.summary.summary, hook.summary.details
        if hook.custom_instructions is not None:
            custom_instructions = hook.custom_instructions
        if hook.replace_instructions is not None:
            replace_instructions = hook.replace_instructions
        if hook.label is not None:
            label = hook.label
    if not summary_text and move.summarize and collected.entries:
        api_key = await config.summary_api_key()
        try:
            generated = await generate_branch_summary(
                collected.entries,
                config.model,
                api_key=api_key,
                headers=config.stream_options.headers,
                signal=signal,
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                reserve_tokens=config.compaction.reserve_tokens,
                stream_fn=config.summary_stream_fn(),
            )
        except BranchSummaryError as exc:
            if exc.code == "aborted":
                return NavigateTreeResult(cancelled=True)
            raise as_harness_error(exc, "branch_summary") from exc
        summary_text, details = generated.summary, generated.details()

    editor_text: str | None = None
    new_leaf: str | None = target_id
    if isinstance(target, MessageEntry) and isinstance(target.message, UserMessage):
        new_leaf, editor_text = target.parent_id, text_of(target.message.content)
    elif isinstance(target, CustomMessageEntry):
        new_leaf, editor_text = target.parent_id, text_of(target.content)
    session.set_leaf(new_leaf)  # written by what follows: the summary, or the next prompt
    summary_entry: BranchSummaryEntry | None = None
    if summary_text:
        text = summary_text
        written = writer.persist(
            lambda: session.append_branch_summary(
                text,
                # pi 1.6: the leaf the summarised branch was left at ("root": none)
                from_id=old_leaf if old_leaf is not None else "root",
                details=details,
                from_hook=from_hook,
            )
        )
        assert isinstance(written, BranchSummaryEntry)
        summary_entry = written
    if label:
        labelled = summary_entry.id if summary_entry is not None else target_id
        final_label = label
        writer.persist(lambda: session.append_label(labelled, final_label))
    await emit(
        SessionTreeEvent(
            old_leaf_id=old_leaf,
            new_leaf_id=session.leaf_id,
            summary_entry=summary_entry,
            from_hook=from_hook,
        )
    )
    return NavigateTreeResult(False, editor_text, summary_entry)
