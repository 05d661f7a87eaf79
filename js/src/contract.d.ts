// The widgets' contract as the front ends read it: the synced state (traits) and custom messages
// that pi_notebook/notebook/widgets/protocol.py defines on the kernel's side (the tree's paging
// messages are tree_view.py's). Types only: the views' JSDoc imports them, nothing is bundled.
// Keep it in step with protocol.py; tests/fixtures/widget_contract.json holds real states.

/** A trait that holds a `T`, or `{}` for none. */
export type OrEmpty<T> = T | { [K in keyof T]?: never };

// --- run view: state -----------------------------------------------------------------------------

export type RunStatus = "waiting" | "streaming" | "running_tools" | "awaiting_approval" | "done" | "aborted" | "error";

export interface UsageSummary {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  total_tokens: number;
  /** Dollars. */
  cost: number;
}

export interface BudgetMeterRow {
  scope: "run" | "session";
  kind: "cost" | "tokens" | "turns";
  spent: number;
  cap: number;
}

export interface RunHeader {
  model: string;
  thinking_level: string;
  usage: UsageSummary;
  context_tokens: number;
  context_window: number;
  budget: BudgetMeterRow[];
  answers_only: boolean;
  compaction: string;
}

export interface RunControls {
  stop: boolean;
  stop_tool: boolean;
  steer: boolean;
  follow_up: boolean;
  tree: boolean;
  insert_code: boolean;
  /** Words naming the cell "Apply as edit" changes; "" for none. */
  edit_code: string;
}

export interface ImageData {
  mime_type: string;
  /** Base64. */
  data: string;
}

export interface TextBlock {
  type: "text";
  text: string;
}

export interface ThinkingBlock {
  type: "thinking";
  text: string;
  redacted: boolean;
}

export interface ToolCallBlock {
  type: "toolCall";
  id: string;
  name: string;
  args: string;
  complete: boolean;
}

export type Block = TextBlock | ThinkingBlock | ToolCallBlock;

export type Origin = "prompt" | "steer" | "follow_up" | "user";

export interface UserItem {
  kind: "user";
  id: string;
  text: string;
  images: ImageData[];
  origin: Origin;
}

export interface AssistantItem {
  kind: "assistant";
  id: string;
  blocks: Block[];
  /** null while streaming. */
  stop_reason: string | null;
  error_message: string | null;
  model: string;
  usage: UsageSummary | null;
}

export type ApprovalState = "pending" | "allowed" | "denied" | "timed_out" | "cancelled";

export interface ApprovalPreview {
  title: string;
  language: string;
  source: string;
  diff: string;
  always: boolean;
}

export interface ToolApproval {
  state: ApprovalState;
  timeout: number | null;
  reason: string;
  preview: ApprovalPreview | null;
  review: boolean;
}

export type ReviewDecision = "pending" | "accepted" | "rejected";

export interface ReviewChange {
  tool_call_id: string;
  tool_name: string;
  preview: ApprovalPreview;
  decision: ReviewDecision;
}

export interface ChangeReview {
  id: string;
  timeout: number | null;
  changes: ReviewChange[];
}

/** A Jupyter mime bundle: mime type → its data as text. */
export type MimeBundle = Record<string, string>;

export interface ToolResultItem {
  kind: "tool_result";
  id: string;
  tool_call_id: string;
  tool_name: string;
  is_error: boolean;
  text: string;
  text_length: number;
  images: ImageData[];
  mime_bundle: MimeBundle | null;
  duration_ms: number | null;
  approval: ToolApproval | null;
}

export interface NoteItem {
  kind: "note";
  id: string;
  role: string;
  title: string;
  /** Markdown. */
  text: string;
}

export type TranscriptItem = UserItem | AssistantItem | ToolResultItem | NoteItem;

/** `[position, at, text, meta]`: see protocol.py's BlockEdit. */
export type BlockEdit = [number, number, string, Partial<Block> | null];

export type PatchOp =
  | ["push", number, TranscriptItem[]]
  | ["current", OrEmpty<AssistantItem>]
  | ["blocks", string, BlockEdit[]]
  | ["promote", number, Partial<AssistantItem>];

export interface RunPatch {
  type: "patch";
  seq: number;
  ops: PatchOp[];
  /** Other traits whose value changed, whole. */
  set: Partial<RunState>;
}

export interface RunningTool {
  tool_call_id: string;
  tool_name: string;
  args: string;
  /** Epoch milliseconds. */
  started_at: number;
  progress: string;
  progress_bundle: MimeBundle | null;
  progress_images: ImageData[];
  approval: ToolApproval | null;
}

export interface QueuedMessage {
  kind: "steer" | "follow_up";
  text: string;
}

/** The run view's synced traits. */
export interface RunState {
  status: RunStatus;
  header: RunHeader;
  messages: TranscriptItem[];
  /** The reply in progress. */
  current: OrEmpty<AssistantItem>;
  running_tools: Record<string, RunningTool>;
  queued: QueuedMessage[];
  controls: RunControls;
  notice: string;
  error: string;
  review: OrEmpty<ChangeReview>;
  stalled_ms: number;
  patch_seq: number;
}

// --- run view: custom messages -------------------------------------------------------------------

export type CodeActionRequest = { type: "code_action"; action: "insert" | "edit"; item_id: string; source: string };

export type ApprovalReply = { type: "approval"; tool_call_id: string; allow: boolean; always?: boolean };

export type ReviewReply = { type: "review"; review_id: string; accept: boolean; tool_call_id?: string };

export type RunRequest =
  | { type: "stop" }
  | { type: "stop_tool"; tool_call_id: string }
  | { type: "steer"; text: string }
  | { type: "follow_up"; text: string }
  | ApprovalReply
  | ReviewReply
  | { type: "expand"; tool_call_id: string }
  | CodeActionRequest
  | { type: "open_tree" }
  | { type: "dismiss_notice" }
  | { type: "resync" };

export interface ExpandReply {
  type: "expanded";
  tool_call_id: string;
  text: string;
}

/** Kernel → run view. */
export type RunMessage = RunPatch | ExpandReply;

// --- session tree --------------------------------------------------------------------------------

export type NodeKind =
  | "user"
  | "assistant"
  | "tool_result"
  | "message"
  | "model_change"
  | "thinking_change"
  | "active_tools"
  | "compaction"
  | "branch_summary"
  | "custom"
  | "custom_message"
  | "label"
  | "session_info"
  | "system"
  | "context_edit"
  | "usage"
  | "other";

/** A display row (tree_view.py's TreeView.display_rows):
 * `[id, kind, title, model, tokens, cost, flag, label, depth, bits, hidden]`. */
export type DisplayRow = [string, NodeKind, string, string, number, number, string, string, number, number, number];

/** The synced `page` trait (tree_state.py's TreeState.page): one bounded page of display rows. */
export interface TreePage {
  layout: number;
  total: number;
  entries: number;
  leaf_index: number;
  show_meta: boolean;
  /** `[start, rows]`: rows from display index `start` on. */
  segments: [number, DisplayRow[]][];
}

export interface TreeControls {
  navigate: boolean;
  fork: boolean;
  label: boolean;
  compact: boolean;
}

export interface NodeDetail {
  id: string;
  type: string;
  timestamp: string;
  title: string;
  model: string;
  tokens: number;
  cost: number;
  items: TranscriptItem[];
  text: string;
}

/** The session tree's synced traits. */
export interface TreeState {
  page: OrEmpty<TreePage>;
  leaf_id: string | null;
  session_name: string;
  selected_id: string | null;
  selected_detail: OrEmpty<NodeDetail>;
  controls: TreeControls;
  busy: string;
  notice: string;
  restore: OrEmpty<RestoreCard>;
}

export type RowsRequest = { type: "rows"; layout: number; start: number; end: number };

export type TreeRequest =
  | RowsRequest
  | { type: "select"; id: string }
  | { type: "navigate"; id: string; summarize: boolean }
  | { type: "fork"; id: string }
  | { type: "label"; id: string; text: string }
  | { type: "fold"; id: string; folded: boolean }
  | { type: "fold_side" }
  | { type: "show_meta"; show: boolean }
  | { type: "search"; query: string }
  | { type: "reveal"; id: string }
  | { type: "compact" }
  | { type: "dismiss_notice" }
  | RestoreReply;

/** Kernel → tree: rows of `layout` from `start` on (a `rows` request's answer, or a reveal's). */
export interface RowsReply {
  type: "rows";
  layout: number;
  start: number;
  rows: DisplayRow[];
}

/** Kernel → tree: where a revealed entry now is. */
export interface RevealedReply {
  type: "revealed";
  layout: number;
  id: string;
  index: number;
}

/** A search match: `[id, kind, title, label]`. */
export type SearchMatch = [string, NodeKind, string, string];

/** Kernel → tree: a search's matches (at most a hundred) and how many there were. */
export interface FoundReply {
  type: "found";
  query: string;
  matches: SearchMatch[];
  total: number;
}

export type TreeMessage = RowsReply | RevealedReply | FoundReply;

// --- restore card --------------------------------------------------------------------------------

export type RestoreCardState = "pending" | "allowed" | "denied" | "done" | "refused";

export type VariableChange = "restored" | "removed" | "kept" | "unrestorable";

export interface RestoreVariable {
  name: string;
  change: VariableChange;
  type: string;
  note: string;
}

export interface RestoreCell {
  label: string;
  source: string;
  names: string[];
}

export interface RestoreDocumentStep {
  action: "delete" | "unedit" | "reinsert";
  cell_id: string;
  title: string;
  source: string;
  problem: string;
}

export interface RestoreCard {
  id: string;
  target_id: string;
  title: string;
  checkpoint: string;
  refusal: string;
  variables: RestoreVariable[];
  cells: RestoreCell[];
  document: RestoreDocumentStep[];
  state: RestoreCardState;
  result: string;
}

export interface RestoreReply {
  type: "restore";
  card_id: string;
  allow: boolean;
  revert_document?: boolean;
}

/** The restore widget's synced traits. */
export interface RestoreState {
  /** `{}` before there is one. */
  card: OrEmpty<RestoreCard>;
  notice: string;
}
