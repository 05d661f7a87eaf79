"""The contract between the widgets' Python halves and their front ends (``js/src``).

Synced state (traits) is the source of truth: a view rendered late, after a page reload or from a
saved notebook shows everything from state alone. While a run streams, the run view's content
travels as append-only ``patch`` messages (:class:`RunPatch`) instead of trait updates: each
carries only what changed since the previous one (new text, new items), and the page applies it
to its copy of the model's state, so that copy (what a second view renders and what the notebook
saves) stays whole. The kernel's traits hold the whole state at all times, so a front end that
joins late gets everything with the ordinary state request; ``patch_seq`` tells which patches
that state includes, and a front end that sees a gap in the sequence asks for the state again
(:class:`ResyncRequest`). Other custom messages are requests from the front end and the replies
to them.

Run view (``RunView``) traits:

======================  ===============================================================
``status``              :data:`RunStatus`
``header``              :class:`RunHeader` (model, thinking level, usage, context)
``messages``            list of :data:`TranscriptItem`, finished items only, append-only
``current``             the in-progress :class:`AssistantItem`, or ``{}``
``running_tools``       ``{tool_call_id: RunningTool}``, tools started and not finished
``queued``              list of :class:`QueuedMessage` (steering/follow-ups not yet injected)
``controls``            :class:`RunControls` (which buttons have a handler in the kernel)
``notice``              a plain-words note (a callback failed…), ``""`` for none
``error``               why the run failed, ``""`` for none
``review``              the pending :class:`ChangeReview` (several cell changes of one reply,
                        decided together), ``{}`` for none
``stalled_ms``          how long the model request had been silent when the LLM layer last
                        said so (``StreamOptions.on_stall``); 0 while data flows
``patch_seq``           the ``seq`` of the last :class:`RunPatch` this state includes
======================  ===============================================================

The functions of :mod:`.items` turn pi's message JSON into these shapes.

Session tree (``TreeView``) traits: ``page`` (one bounded page of display rows: the tree is paged,
the rest is fetched with ``rows`` requests answered by custom messages, never saved; see
``tree_view``), ``leaf_id``, ``session_name``, ``selected_id``, ``selected_detail``
(:class:`NodeDetail` or ``{}``), ``controls`` (:class:`TreeControls`), ``busy``, ``notice`` and
``restore`` (the :class:`RestoreCard` a move offers, ``{}`` for none).

Restore card (``RestoreView``, shown by ``%fork TARGET --restore``) traits: ``card``
(:class:`RestoreCard`, ``{}`` before there is one) and ``notice``. Both it and the tree answer
the card with a :class:`RestoreReply`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "ApprovalPreview",
    "ApprovalReply",
    "ApprovalState",
    "AssistantItem",
    "Block",
    "BlockEdit",
    "BudgetMeterRow",
    "ChangeReview",
    "CodeActionRequest",
    "CompactRequest",
    "DismissNoticeRequest",
    "ExpandReply",
    "ExpandRequest",
    "FollowUpRequest",
    "ForkRequest",
    "ImageData",
    "LabelRequest",
    "NavigateRequest",
    "NodeDetail",
    "NodeKind",
    "NodeRow",
    "NoteItem",
    "OpenTreeRequest",
    "Origin",
    "PatchOp",
    "QueuedMessage",
    "RestoreCard",
    "RestoreCardState",
    "RestoreCell",
    "RestoreDocumentStep",
    "RestoreReply",
    "RestoreVariable",
    "ResyncRequest",
    "ReviewChange",
    "ReviewDecision",
    "ReviewReply",
    "RunControls",
    "RunHeader",
    "RunPatch",
    "RunRequest",
    "RunStatus",
    "RunningTool",
    "SelectRequest",
    "SteerRequest",
    "StopRequest",
    "StopToolRequest",
    "TextBlock",
    "ThinkingBlock",
    "ToolApproval",
    "ToolCallBlock",
    "ToolResultItem",
    "TranscriptItem",
    "TreeControls",
    "TreeRequest",
    "UsageSummary",
    "UserItem",
]

# --- run view: state ---------------------------------------------------------------------------

RunStatus: TypeAlias = Literal[
    "waiting",  # waiting for the model (before the first token of a reply)
    "streaming",
    "running_tools",
    "awaiting_approval",
    "done",
    "aborted",
    "error",
]


class UsageSummary(TypedDict):
    input: int
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    cost: float
    """Dollars."""


class BudgetMeterRow(TypedDict):
    scope: Literal["run", "session"]
    kind: Literal["cost", "tokens", "turns"]
    spent: float
    """Dollars, tokens or model requests so far."""
    cap: float


class RunHeader(TypedDict):
    model: str
    """``provider/model-id``, ``""`` if unknown."""
    thinking_level: str
    usage: UsageSummary
    """Summed over the run's replies."""
    context_tokens: int
    """Tokens in the context as of the latest reply."""
    context_window: int
    """0 if unknown."""
    budget: list[BudgetMeterRow]
    """Spending against each cap of the run and its session (empty: no caps)."""
    answers_only: bool
    """The model cannot call tools: it is offered none and answers in text."""
    compaction: str
    """The latest compaction of this run: ``compacting: 7,251 tokens → …`` while it runs,
    ``compacted: 7,251 → 2,100 tokens`` after; ``""`` when none."""


class RunControls(TypedDict):
    stop: bool
    stop_tool: bool
    """A running tool card has its own stop (``StopToolRequest``)."""
    steer: bool
    follow_up: bool
    tree: bool
    insert_code: bool
    """Runnable code blocks of the replies get "Insert as cell" (``CodeActionRequest``)."""
    edit_code: str
    """They get "Apply as edit" of this cell (words naming it, e.g. ``cell 3f2a…``); ``""``:
    no cell to edit."""


class ImageData(TypedDict):
    mime_type: str
    data: str
    """Base64."""


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    text: str
    redacted: bool


class ToolCallBlock(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    args: str
    """The arguments as text: the raw JSON as it streams, pretty-printed once complete."""
    complete: bool


Block: TypeAlias = TextBlock | ThinkingBlock | ToolCallBlock


Origin: TypeAlias = Literal["prompt", "steer", "follow_up", "user"]


class UserItem(TypedDict):
    kind: Literal["user"]
    id: str
    text: str
    images: list[ImageData]
    origin: Origin
    """How it entered the run; ``user`` = injected by something the view was not told about."""


class AssistantItem(TypedDict):
    kind: Literal["assistant"]
    id: str
    """``current`` keeps the id its finished item will have."""
    blocks: list[Block]
    stop_reason: str | None
    """``None`` while streaming."""
    error_message: str | None
    model: str
    usage: UsageSummary | None


ApprovalState: TypeAlias = Literal["pending", "allowed", "denied", "timed_out", "cancelled"]


class ApprovalPreview(TypedDict):
    """What a tool call would do, shown on its approval card (the notebook's write tools:
    ``notebook/workspace/edit_tools.py``)."""

    title: str
    """One line, e.g. "Insert a code cell below code cell In [3] (…)"."""
    language: str
    """Of ``source``: ``python`` or ``markdown``."""
    source: str
    """The cell source it proposes (insert, edit) or acts on (delete, run)."""
    diff: str
    """A unified diff against the cell's current source (edits), ``""`` for none."""
    always: bool
    """Offer "always allow for this session" (``ApprovalReply.always``)."""


class ToolApproval(TypedDict):
    state: ApprovalState
    timeout: float | None
    """Seconds the kernel waits for an answer (``None``: no limit)."""
    reason: str
    """Extra plain words, e.g. "The run was stopped."."""
    preview: ApprovalPreview | None
    """What the call would do, when the tool can say (else the card shows its arguments)."""
    review: bool
    """Decided in the run's :class:`ChangeReview` (the card has no buttons of its own)."""


ReviewDecision: TypeAlias = Literal["pending", "accepted", "rejected"]


class ReviewChange(TypedDict):
    tool_call_id: str
    tool_name: str
    preview: ApprovalPreview
    decision: ReviewDecision


class ChangeReview(TypedDict):
    """Several cell changes one reply proposed, on one card: each is accepted or rejected, and
    none is applied before every one is decided."""

    id: str
    timeout: float | None
    """Seconds the kernel waits for the decisions (``None``: no limit)."""
    changes: list[ReviewChange]


class ToolResultItem(TypedDict):
    kind: Literal["tool_result"]
    id: str
    tool_call_id: str
    tool_name: str
    is_error: bool
    text: str
    """The text content, cut to a preview when long (ask with ``expand`` for all of it)."""
    text_length: int
    """Length of the whole text; more than ``len(text)`` means the preview was cut."""
    images: list[ImageData]
    mime_bundle: dict[str, str] | None
    """``details["mime_bundle"]`` of the result, the types the view can show."""
    duration_ms: int | None
    approval: ToolApproval | None


class NoteItem(TypedDict):
    """A message of another role: compaction or branch summary, custom message, bash run."""

    kind: Literal["note"]
    id: str
    role: str
    title: str
    text: str
    """Markdown."""


TranscriptItem: TypeAlias = UserItem | AssistantItem | ToolResultItem | NoteItem


BlockEdit: TypeAlias = tuple[int, int, str, dict[str, Any] | None]
"""``[position, at, text, meta]``: block ``position`` of ``current`` becomes its text (``args``
for a tool call) cut to ``at`` characters plus ``text``; ``meta`` (the block's other keys) is
given for a new block or when they change (``null``: keep them). ``at`` is never more than the
length the front end has; a block past the end needs ``meta``."""

PatchOp: TypeAlias = (
    tuple[Literal["push"], int, list[TranscriptItem]]
    | tuple[Literal["current"], AssistantItem | dict[str, Any]]
    | tuple[Literal["blocks"], str, list[BlockEdit]]
    | tuple[Literal["promote"], int, dict[str, Any]]
)
"""One change, applied in order:

- ``["push", start, items]``: ``messages[start:] = items`` (``start`` is the length before);
- ``["current", item]``: ``current = item`` whole (``{}``: no reply in progress);
- ``["blocks", id, edits]``: :data:`BlockEdit` s to ``current`` (whose ``id`` it names);
- ``["promote", start, fields]``: the reply in progress is finished: ``messages[start]`` is
  ``current`` with ``fields`` (``stop_reason``, ``usage``…) set on it, and ``current = {}``.
  The text, streamed already, is not sent again."""


class RunPatch(TypedDict):
    """Kernel → front end: what changed in the run view's state since the previous patch."""

    type: Literal["patch"]
    seq: int
    """1, 2, 3… per view; the state's ``patch_seq`` after applying it."""
    ops: list[PatchOp]
    set: dict[str, Any]
    """Other traits whose value changed, whole (``status``, ``header``, ``running_tools``…)."""


class RunningTool(TypedDict):
    tool_call_id: str
    tool_name: str
    args: str
    started_at: int
    """Epoch milliseconds."""
    progress: str
    """Text of the latest ``tool_execution_update``."""
    progress_bundle: dict[str, str] | None
    progress_images: list[ImageData]
    approval: ToolApproval | None


class QueuedMessage(TypedDict):
    kind: Literal["steer", "follow_up"]
    text: str


# --- run view: custom messages -----------------------------------------------------------------


class StopRequest(TypedDict):
    type: Literal["stop"]


class StopToolRequest(TypedDict):
    type: Literal["stop_tool"]
    tool_call_id: str


class SteerRequest(TypedDict):
    type: Literal["steer"]
    text: str


class FollowUpRequest(TypedDict):
    type: Literal["follow_up"]
    text: str


class ApprovalReply(TypedDict):
    type: Literal["approval"]
    tool_call_id: str
    allow: bool
    always: NotRequired[bool]
    """Allow this tool for the rest of the session (offered when ``preview.always``)."""


class ReviewReply(TypedDict):
    """Decide one change of the review (``tool_call_id``), or every undecided one."""

    type: Literal["review"]
    review_id: str
    accept: bool
    tool_call_id: NotRequired[str]


class ExpandRequest(TypedDict):
    type: Literal["expand"]
    tool_call_id: str


class ResyncRequest(TypedDict):
    """Front end → kernel: a patch is missing (the page joined while patches were in flight):
    send the whole state again."""

    type: Literal["resync"]


class CodeActionRequest(TypedDict):
    """A click on "Insert as cell" or "Apply as edit" under a fenced code block of a reply
    (python or unlabelled); the kernel acts only on code that is a block of that reply."""

    type: Literal["code_action"]
    action: Literal["insert", "edit"]
    item_id: str
    """The reply (an :class:`AssistantItem`'s ``id``)."""
    source: str
    """The block's code."""


class OpenTreeRequest(TypedDict):
    type: Literal["open_tree"]


class DismissNoticeRequest(TypedDict):
    type: Literal["dismiss_notice"]


RunRequest: TypeAlias = (
    StopRequest
    | StopToolRequest
    | SteerRequest
    | FollowUpRequest
    | ApprovalReply
    | ReviewReply
    | ExpandRequest
    | CodeActionRequest
    | OpenTreeRequest
    | DismissNoticeRequest
    | ResyncRequest
)
"""Front end → kernel messages of the run view."""


class ExpandReply(TypedDict):
    """Kernel → front end: the whole text of a tool result, answering an ``expand`` request."""

    type: Literal["expanded"]
    tool_call_id: str
    text: str


# --- session tree ------------------------------------------------------------------------------

NodeKind: TypeAlias = Literal[
    "user",
    "assistant",
    "tool_result",
    "message",  # another message role (bash execution, custom, summaries as messages)
    "model_change",
    "thinking_change",
    "active_tools",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "system",  # pi 1.6: a system message (prompt sections, tools)
    "context_edit",  # pi 1.6: an edit hiding or replacing an earlier message in the context
    "usage",  # pi 1.6: tokens spent outside the transcript (hidden like pi hides it)
    "other",
]

NodeRow: TypeAlias = tuple[str, int | None, NodeKind, str, str, int, float, str]
"""One entry as a row: ``[id, parent, kind, title, model, tokens, cost, flag]``. ``title`` is a
one-line summary, ``model`` is ``provider/model-id`` for replies and model changes,
``tokens``/``cost`` are a reply's total tokens and dollars, ``flag`` is ``"error"``,
``"aborted"``, ``"edited"`` or ``"omitted"`` (a context edit replaced or hid the message) or
``""``. The tree widget sends display rows built from these (``TreeView.display_rows``)."""


class TreeControls(TypedDict):
    navigate: bool
    fork: bool
    label: bool
    compact: bool


class NodeDetail(TypedDict):
    id: str
    type: str
    """The entry type (``message``, ``compaction``, …)."""
    timestamp: str
    title: str
    model: str
    tokens: int
    cost: float
    items: list[TranscriptItem]
    """The entry's message(s), in the run view's shapes."""
    text: str
    """Anything else worth showing (an entry without a message, as JSON)."""


class SelectRequest(TypedDict):
    type: Literal["select"]
    id: str


class NavigateRequest(TypedDict):
    type: Literal["navigate"]
    id: str
    summarize: bool


class ForkRequest(TypedDict):
    type: Literal["fork"]
    id: str


class LabelRequest(TypedDict):
    type: Literal["label"]
    id: str
    text: str
    """An empty text clears the label."""


class CompactRequest(TypedDict):
    type: Literal["compact"]


# --- restore card --------------------------------------------------------------------------------

RestoreCardState: TypeAlias = Literal["pending", "allowed", "denied", "done", "refused"]


class RestoreVariable(TypedDict):
    name: str
    change: Literal["restored", "removed", "kept", "unrestorable"]
    """``restored`` (set back to its value at the node), ``removed`` (did not exist there),
    ``kept`` (the same there: left as is), ``unrestorable`` (its value there was not stored)."""
    type: str
    note: str
    """Plain words: a size, why it was not stored…"""


class RestoreCell(TypedDict):
    """A cell run again on approval: it made values that could not be restored."""

    label: str
    """``In [4]``."""
    source: str
    names: list[str]


class RestoreDocumentStep(TypedDict):
    """One undo of the agent's changes to the notebook on the branch being left."""

    action: Literal["delete", "unedit", "reinsert"]
    cell_id: str
    title: str
    source: str
    """The source the cell gets back (``unedit``, ``reinsert``) or has (``delete``)."""
    problem: str
    """Why it cannot be undone, ``""`` when it can."""


class RestoreCard(TypedDict):
    """What moving to ``target_id`` would restore, approved or denied as one."""

    id: str
    target_id: str
    title: str
    checkpoint: str
    """Which checkpoint the variables come from, ``""`` for none."""
    refusal: str
    """Why the variables cannot be restored (no checkpoint, a damaged one), ``""`` if they can;
    the kernel is then left as it is and only ``document`` is offered."""
    variables: list[RestoreVariable]
    cells: list[RestoreCell]
    document: list[RestoreDocumentStep]
    state: RestoreCardState
    result: str
    """What was done, once decided."""


class RestoreReply(TypedDict):
    """Front end → kernel: the user's answer to the card ``card_id``."""

    type: Literal["restore"]
    card_id: str
    allow: bool
    revert_document: NotRequired[bool]
    """Undo the agent's cell changes too (default true when the card lists any)."""


TreeRequest: TypeAlias = (
    SelectRequest
    | NavigateRequest
    | ForkRequest
    | LabelRequest
    | CompactRequest
    | DismissNoticeRequest
    | RestoreReply
)
"""Front end → kernel messages of the session tree (it needs no replies: answers are state)."""
