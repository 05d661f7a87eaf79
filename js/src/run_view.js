// @ts-check
// The live run view: header (status, model, tokens, cost, context), transcript, controls.
// State (traits) is the source of truth. While a run streams, the kernel sends what changed as
// append-only `patch` messages; `initialize` applies them to the model's state (once per model,
// not per view), so every view, and the notebook's saved widget state, has the whole run.
import { formatCost, formatTokens, h } from "./dom.js";
import { decorateCodeBlocks } from "./code_actions.js";
import { AssistantView, ToolCard, isBudgetStop, renderItem, renderReview } from "./items.js";
import { showNotice } from "./notice.js";

/**
 * @typedef {import("./contract").AssistantItem} AssistantItem
 * @typedef {import("./contract").BlockEdit} BlockEdit
 * @typedef {import("./contract").RunPatch} RunPatch
 * @typedef {import("./contract").RunRequest} RunRequest
 * @typedef {import("./contract").RunState} RunState
 * @typedef {import("./contract").TranscriptItem} TranscriptItem
 * @typedef {import("@anywidget/types").AnyModel<RunState>} RunModel
 */

/** @type {Record<import("./contract").RunStatus, string>} */
const STATUS_TEXT = {
  waiting: "waiting for the model",
  streaming: "streaming",
  running_tools: "running tools",
  awaiting_approval: "waiting for approval",
  done: "done",
  aborted: "stopped",
  error: "error",
};

// Tool call ids of the changes the user asks for from the view ("Apply as edit"): their cards
// have no tool call in a reply to live in.
const USER_ACTION = "pi-user-";

/** @type {Set<string>} */
const LIVE = new Set(["waiting", "streaming", "running_tools", "awaiting_approval"]);

// A stopped reply the provider never reported usage for (its usage is all zeros).
/** @param {TranscriptItem[]} items */
function stoppedWithoutUsage(items) {
  return items.some((item) => item.kind === "assistant" && item.stop_reason === "aborted" && !isBudgetStop(item) && !(item.usage && (item.usage.input || item.usage.output || item.usage.cost)));
}

/** @param {import("./contract").Block} block */
const blockText = (block) => String((block.type === "toolCall" ? block.args : block.text) ?? "");

/**
 * @param {AssistantItem} current
 * @param {BlockEdit[]} edits
 * @returns {AssistantItem | null}
 */
function editBlocks(current, edits) {
  const blocks = (current.blocks || []).slice();
  for (const [position, at, text, meta] of edits) {
    const old = blocks[position];
    if ((!old && !meta) || position > blocks.length) return null;
    // `meta` carries the block's other keys whole (a new block, or keys that changed)
    const base = /** @type {import("./contract").Block} */ ({ ...(meta || old) });
    const oldText = old ? blockText(old) : "";
    if (at > oldText.length) return null;
    if (base.type === "toolCall") base.args = oldText.slice(0, at) + text;
    else base.text = oldText.slice(0, at) + text;
    blocks[position] = base;
  }
  return { ...current, blocks };
}

// The state after `patch` (see protocol.RunPatch): the changed keys only, `null` when
// the patch does not follow on from `state` (a gap: ask for the whole state again), `{}` when
// `state` includes it already. Never modifies `state`.
/**
 * @param {Partial<Pick<RunState, "patch_seq" | "messages" | "current">>} state
 * @param {RunPatch} patch
 * @returns {Partial<RunState> | null}
 */
export function applyPatch(state, patch) {
  const seq = state.patch_seq || 0;
  if (patch.seq <= seq) return {};
  if (patch.seq !== seq + 1) return null;
  let messages = state.messages || [];
  /** @type {import("./contract").OrEmpty<AssistantItem>} */
  let current = state.current || {};
  /** @type {Partial<RunState>} */
  const changed = {};
  for (const op of patch.ops || []) {
    const kind = op[0];
    if (kind === "push") {
      if (op[1] !== messages.length) return null;
      messages = messages.concat(op[2]);
      changed.messages = messages;
    } else if (kind === "current") {
      current = op[1] || {};
      changed.current = current;
    } else if (kind === "blocks") {
      if (!current.id || current.id !== op[1]) return null;
      const edited = editBlocks(current, op[2]);
      if (edited === null) return null;
      current = edited;
      changed.current = current;
    } else if (kind === "promote") {
      if (op[1] !== messages.length || !current.id) return null;
      messages = messages.concat([{ ...current, ...op[2] }]);
      current = {};
      changed.messages = messages;
      changed.current = current;
    }
  }
  return { ...(patch.set || {}), ...changed, patch_seq: patch.seq };
}

// Once per model: apply the kernel's patches to the model's state (locally: nothing is sent
// back). A gap (the page joined while patches were in flight) asks for the state again once.
/** @type {import("@anywidget/types").Initialize<RunState>} */
function initialize({ model }) {
  let askedAt = -1;
  /** @param {import("./contract").RunMessage | null | undefined} message */
  const onCustom = (message) => {
    if (!message || message.type !== "patch") return;
    const state = { patch_seq: model.get("patch_seq"), messages: model.get("messages"), current: model.get("current") };
    const changes = applyPatch(state, message);
    if (changes === null) {
      if (askedAt !== state.patch_seq) {
        askedAt = state.patch_seq;
        model.send({ type: "resync" });
      }
      return;
    }
    /**
     * @template {keyof RunState} K
     * @param {K} name
     */
    const copy = (name) => {
      const value = changes[name];
      if (value !== undefined) model.set(name, value);
    };
    for (const name of /** @type {(keyof RunState)[]} */ (Object.keys(changes))) copy(name);
  };
  model.on("msg:custom", onCustom);
  return () => model.off("msg:custom", onCustom);
}

// Unsent steer-box text survives a re-render of the same widget (e.g. an output update).
/** @type {WeakMap<RunModel, string>} */
const drafts = new WeakMap();

// One cap: "run $0.0123/$0.20" with a bar that fills as the spending nears the cap.
/** @param {import("./contract").BudgetMeterRow} row */
function budgetMeter(row) {
  /** @param {number} n */
  const value = (n) => (row.kind === "cost" ? formatCost(n) : row.kind === "tokens" ? formatTokens(n) : String(n));
  const fraction = row.cap > 0 ? Math.min(1, row.spent / row.cap) : 0;
  const fill = h("span", { class: "pi-budget-fill" });
  fill.style.width = `${(fraction * 100).toFixed(1)}%`;
  const unit = row.kind === "cost" ? "" : ` ${row.kind}`;
  const text = `${row.scope} ${value(row.spent)}/${value(row.cap)}${unit}`;
  const meter = h("span", { class: "pi-budget-meter", title: `${row.scope} ${row.kind} cap` }, h("span", { class: "pi-budget-bar" }, fill), h("span", { class: "pi-budget-text", text }));
  meter.classList.toggle("pi-budget-high", fraction >= 0.8);
  return meter;
}

export class RunView {
  // Made by build(), called from the constructor.
  /** @type {HTMLElement} */ statusEl;
  /** @type {HTMLElement} */ stallEl;
  /** @type {HTMLElement} */ modelEl;
  /** @type {HTMLElement} */ answersOnlyEl;
  /** @type {HTMLElement} */ compactionEl;
  /** @type {HTMLElement} */ usageEl;
  /** @type {HTMLElement} */ budgetEl;
  /** @type {HTMLElement} */ contextBar;
  /** @type {HTMLElement} */ contextText;
  /** @type {HTMLElement} */ contextEl;
  /** @type {HTMLButtonElement} */ treeButton;
  /** @type {HTMLElement} */ noticeEl;
  /** @type {HTMLElement} */ errorEl;
  /** @type {HTMLElement} */ transcriptEl;
  /** @type {HTMLElement} */ liveEl;
  /** @type {HTMLElement} */ queuedEl;
  /** @type {HTMLElement} */ reviewEl;
  /** @type {HTMLButtonElement} */ stopButton;
  /** @type {HTMLTextAreaElement} */ input;
  /** @type {HTMLButtonElement} */ sendButton;
  /** @type {HTMLElement} */ controlsEl;
  /** @type {HTMLElement} */ root;

  /**
   * @param {RunModel} model
   * @param {HTMLElement} el
   * @param {{ now?: () => number, setInterval?: typeof globalThis.setInterval, clearInterval?: typeof globalThis.clearInterval }} [clock]
   */
  constructor(model, el, { now = () => Date.now(), setInterval = globalThis.setInterval, clearInterval = globalThis.clearInterval } = {}) {
    this.model = model;
    this.now = now;
    this.clearTimer = clearInterval;
    /** @type {Map<string, ToolCard>} */
    this.cards = new Map();
    /** @type {Map<string, HTMLButtonElement>} */
    this.toolStops = new Map(); // tool call id → the stop button on its running card
    /** @type {string[]} */
    this.itemIds = [];
    /** @type {Set<string>} */
    this.itemIdSet = new Set();
    /** @type {AssistantView | null} */
    this.live = null; // AssistantView of `current`
    /** @type {string | null} */
    this.liveId = null;
    /** @type {import("./items.js").CardHandlers} */
    this.handlers = {
      onApproval: (id, allow, always = false) =>
        this.send(always ? { type: "approval", tool_call_id: id, allow, always } : { type: "approval", tool_call_id: id, allow }),
      onExpand: (id) => this.send({ type: "expand", tool_call_id: id }),
    };
    this.build(el);
    /** @type {[string, () => void][]} */
    this.listeners = [];
    this.stallSince = now();
    /**
     * @param {keyof RunState} name
     * @param {(this: RunView) => void} fn
     */
    const on = (name, fn) => {
      const bound = () => fn.call(this);
      model.on(`change:${name}`, bound);
      this.listeners.push([`change:${name}`, bound]);
    };
    on("messages", this.renderMessages);
    on("current", this.renderCurrent);
    on("stalled_ms", this.renderStallSignal);
    on("running_tools", this.renderRunning);
    on("status", this.renderStatus);
    on("header", this.renderHeader);
    on("controls", this.renderControls);
    on("queued", this.renderQueued);
    on("review", this.renderReview);
    on("notice", this.renderNotice);
    on("error", this.renderError);
    /** @param {import("./contract").RunMessage | null | undefined} msg */
    this.customHandler = (msg) => this.onCustom(msg);
    model.on("msg:custom", this.customHandler);
    this.renderAll();
    this.timer = setInterval(() => this.tick(), 1000);
  }

  /** @param {RunRequest} message */
  send(message) {
    this.model.send(message);
  }

  /** @param {HTMLElement} el */
  build(el) {
    this.statusEl = h("span", { class: "pi-status" });
    this.stallEl = h("span", { class: "pi-stall", hidden: true });
    this.modelEl = h("span", { class: "pi-model" });
    this.answersOnlyEl = h("span", { class: "pi-answers-only", hidden: true }, "this model cannot call tools: answers only");
    this.compactionEl = h("span", { class: "pi-compaction", hidden: true });
    this.usageEl = h("span", { class: "pi-usage" });
    this.budgetEl = h("span", { class: "pi-budget", hidden: true });
    this.contextBar = h("span", { class: "pi-context-fill" });
    this.contextText = h("span", { class: "pi-context-text" });
    this.contextEl = h("span", { class: "pi-context", title: "context window used" }, h("span", { class: "pi-context-bar" }, this.contextBar), this.contextText);
    this.treeButton = h("button", { class: "pi-button pi-tree-button", type: "button", text: "Session tree", onclick: () => this.send({ type: "open_tree" }) });
    this.noticeEl = h("div", { class: "pi-notice", hidden: true });
    this.errorEl = h("div", { class: "pi-run-error", hidden: true });
    this.transcriptEl = h("div", { class: "pi-transcript" });
    this.liveEl = h("div", { class: "pi-live" });
    this.queuedEl = h("div", { class: "pi-queued" });
    this.reviewEl = h("div", { class: "pi-review-slot" });
    this.stopButton = h("button", { class: "pi-button pi-stop-button", type: "button", text: "Stop", onclick: () => this.stop() });
    this.input = h("textarea", { class: "pi-steer-input", rows: 1, placeholder: "" });
    this.sendButton = h("button", { class: "pi-button pi-send", type: "button", onclick: () => this.submit() });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        this.submit();
      }
      event.stopPropagation(); // keep Jupyter's command-mode shortcuts out of the text box
    });
    this.input.addEventListener("input", () => drafts.set(this.model, this.input.value));
    this.input.value = drafts.get(this.model) || "";
    this.controlsEl = h("div", { class: "pi-controls" }, this.stopButton, this.input, this.sendButton);
    this.root = h(
      "div",
      { class: "pi-run" },
      h("div", { class: "pi-header" }, this.statusEl, this.stallEl, this.modelEl, this.answersOnlyEl, this.compactionEl, this.usageEl, this.budgetEl, this.contextEl, this.treeButton),
      this.noticeEl,
      this.transcriptEl,
      this.liveEl,
      this.reviewEl,
      this.errorEl,
      this.queuedEl,
      this.controlsEl,
    );
    el.replaceChildren(this.root);
  }

  renderAll() {
    this.renderHeader();
    this.renderStatus();
    this.renderMessages();
    this.renderCurrent();
    this.renderRunning();
    this.renderQueued();
    this.renderReview();
    this.renderNotice();
    this.renderError();
    this.renderControls();
  }

  get isLive() {
    return LIVE.has(this.model.get("status"));
  }

  renderStatus() {
    /** @type {import("./contract").RunStatus} */
    const status = this.model.get("status") || "waiting";
    this.statusEl.className = `pi-status pi-status-${status}`;
    this.statusEl.textContent = STATUS_TEXT[status] || status;
    this.root.classList.toggle("pi-run-live", this.isLive);
    this.renderStall(this.now());
    this.renderControls();
  }

  // The LLM layer's stall signal (`stalled_ms`, sent every few seconds while the request is
  // silent) counted on between signals with the page's clock.
  renderStallSignal() {
    this.stallSince = this.now();
    this.renderStall(this.stallSince);
  }

  /** @param {number} now epoch milliseconds */
  renderStall(now) {
    const waited = this.model.get("stalled_ms") || 0;
    const stalled = waited > 0 && this.isLive;
    this.stallEl.hidden = !stalled;
    this.stallEl.textContent = stalled ? `waiting for the model — ${Math.floor((waited + now - this.stallSince) / 1000)} s` : "";
  }

  renderHeader() {
    /** @type {Partial<import("./contract").RunHeader>} */
    const header = this.model.get("header") || {};
    const thinking = header.thinking_level && header.thinking_level !== "off" ? ` · thinking ${header.thinking_level}` : "";
    this.modelEl.textContent = header.model ? `${header.model}${thinking}` : "";
    this.answersOnlyEl.hidden = !header.answers_only;
    this.compactionEl.hidden = !header.compaction;
    this.compactionEl.textContent = header.compaction || "";
    /** @type {Partial<import("./contract").UsageSummary>} */
    const u = header.usage || {};
    const cache = u.cache_read || u.cache_write ? ` · cache ${formatTokens(u.cache_read || 0)}/${formatTokens(u.cache_write || 0)}` : "";
    let usage = `↑${formatTokens(u.input || 0)} ↓${formatTokens(u.output || 0)}${cache} · ${formatCost(u.cost || 0)}`;
    if (stoppedWithoutUsage(this.model.get("messages") || [])) {
      usage = u.input || u.output || u.cost ? `${usage} · stopped reply: usage unknown` : "usage unknown: stopped";
    }
    this.usageEl.textContent = usage;
    const rows = header.budget || [];
    this.budgetEl.hidden = rows.length === 0;
    this.budgetEl.replaceChildren(...rows.map(budgetMeter));
    const used = header.context_tokens || 0;
    const window = header.context_window || 0;
    const fraction = window > 0 ? Math.min(1, used / window) : 0;
    this.contextBar.style.width = `${(fraction * 100).toFixed(1)}%`;
    this.contextEl.classList.toggle("pi-context-high", fraction > 0.8);
    this.contextText.textContent = window > 0 ? `${formatTokens(used)}/${formatTokens(window)}` : formatTokens(used);
    this.contextEl.hidden = window <= 0 && used <= 0;
  }

  renderControls() {
    /** @type {Partial<import("./contract").RunControls>} */
    const controls = this.model.get("controls") || {};
    const live = this.isLive;
    this.stopButton.hidden = !controls.stop;
    this.stopButton.disabled = !live;
    this.treeButton.hidden = !controls.tree;
    const canSend = live ? controls.steer : controls.follow_up;
    this.input.hidden = !(controls.steer || controls.follow_up);
    this.sendButton.hidden = this.input.hidden;
    this.input.disabled = !canSend;
    this.sendButton.disabled = !canSend;
    this.sendButton.textContent = live ? "Steer" : "Follow up";
    this.input.placeholder = live ? "Steer the running agent…" : "Ask a follow-up…";
    this.controlsEl.hidden = this.stopButton.hidden && this.input.hidden;
    this.renderRunning();
    this.renderCodeActions();
  }

  renderCodeActions() {
    // A page rendering saved widget state with no kernel behind it (nbconvert's HTML with the
    // widgets embedded) has a widget manager without a kernel: no buttons nothing would answer.
    // (`kernel` belongs to ipywidgets' manager, outside anywidget's typed contract.)
    const manager = /** @type {{ kernel?: unknown } | undefined} */ (this.model.widget_manager);
    const live = !manager || Boolean(manager.kernel);
    /** @type {Partial<import("./contract").RunControls>} */
    const controls = live ? this.model.get("controls") || {} : {};
    decorateCodeBlocks(this.transcriptEl, controls, (message) => this.send(message));
  }

  renderMessages() {
    const items = this.model.get("messages") || [];
    const ids = this.itemIds;
    let prefixOk = ids.length <= items.length;
    // Append-only in normal operation; a different prefix means a full re-render.
    if (prefixOk && ids.length > 0) prefixOk = items[ids.length - 1].id === ids[ids.length - 1] && items[0].id === ids[0];
    if (!prefixOk) {
      this.transcriptEl.replaceChildren();
      this.cards.clear();
      this.itemIds = [];
      this.itemIdSet = new Set();
    }
    for (let i = this.itemIds.length; i < items.length; i++) {
      const item = items[i];
      if (item.id === this.liveId) this.dropLive();
      const el = renderItem(item, this.cards, this.handlers);
      if (el) this.transcriptEl.append(el);
      this.itemIds.push(item.id);
      this.itemIdSet.add(item.id);
    }
    this.renderRunning();
    this.renderHeader();
    this.renderCodeActions();
  }

  dropLive() {
    this.live = null;
    this.liveId = null;
    this.liveEl.replaceChildren();
  }

  renderCurrent() {
    const current = this.model.get("current") || {};
    if (!current.id || this.itemIdSet.has(current.id)) {
      this.dropLive();
      return;
    }
    if (this.live === null || this.liveId !== current.id) {
      this.dropLive();
      this.live = new AssistantView(current, this.cards, this.handlers);
      this.liveId = current.id;
      this.liveEl.append(this.live.el);
    } else {
      this.live.update(current);
    }
    this.renderRunning();
  }

  renderRunning() {
    const running = this.model.get("running_tools") || {};
    const canStop = Boolean((this.model.get("controls") || {}).stop_tool) && this.isLive;
    for (const [id, entry] of Object.entries(running)) {
      let card = this.cards.get(id);
      if (!card && id.startsWith(USER_ACTION)) {
        // a change the user asked for from this view (its own card, in transcript order)
        card = new ToolCard(id, entry.tool_name, this.handlers);
        this.cards.set(id, card);
        this.transcriptEl.append(card.el);
      }
      if (!card) continue;
      card.setRunning(entry);
      if (canStop && !card.finished) this.showToolStop(id, card);
    }
    for (const [id, button] of this.toolStops) {
      const card = this.cards.get(id);
      if (canStop && running[id] && card && !card.finished && card.el.contains(button)) continue;
      button.remove();
      this.toolStops.delete(id);
    }
  }

  // A running call's own stop: the kernel aborts that call only; the run goes on.
  /**
   * @param {string} id
   * @param {ToolCard} card
   */
  showToolStop(id, card) {
    if (this.toolStops.has(id)) return;
    const button = h("button", {
      class: "pi-button pi-tool-stop",
      type: "button",
      text: "Stop",
      title: "Stop this tool call (the run goes on)",
      onclick: /** @param {MouseEvent} event */ (event) => {
        event.stopPropagation();
        button.disabled = true;
        this.send({ type: "stop_tool", tool_call_id: id });
      },
    });
    (card.el.querySelector(".pi-tool-head") || card.el).append(button);
    this.toolStops.set(id, button);
  }

  renderQueued() {
    const queued = this.model.get("queued") || [];
    this.queuedEl.replaceChildren(
      ...queued.map((q) => h("div", { class: "pi-queued-item" }, h("span", { class: "pi-badge", text: q.kind === "steer" ? "steering queued" : "follow-up queued" }), h("span", { text: q.text }))),
    );
  }

  renderReview() {
    const review = this.model.get("review") || {};
    if (!review.id) {
      this.reviewEl.replaceChildren();
      return;
    }
    /**
     * @param {string} reviewId
     * @param {boolean} accept
     * @param {string | null} toolCallId
     */
    const decide = (reviewId, accept, toolCallId) =>
      this.send(toolCallId ? { type: "review", review_id: reviewId, accept, tool_call_id: toolCallId } : { type: "review", review_id: reviewId, accept });
    this.reviewEl.replaceChildren(renderReview(review, decide));
  }

  renderNotice() {
    showNotice(this.noticeEl, this.model.get("notice") || "", () => this.send({ type: "dismiss_notice" }));
  }

  renderError() {
    const error = this.model.get("error") || "";
    this.errorEl.hidden = !error;
    this.errorEl.textContent = error;
  }

  stop() {
    this.stopButton.disabled = true;
    this.send({ type: "stop" });
  }

  submit() {
    const text = this.input.value.trim();
    if (!text || this.input.disabled) return;
    this.send({ type: this.isLive ? "steer" : "follow_up", text });
    this.input.value = "";
    drafts.delete(this.model);
  }

  /** @param {import("./contract").RunMessage | null | undefined} message */
  onCustom(message) {
    if (message && message.type === "expanded") {
      const card = this.cards.get(message.tool_call_id);
      if (card) card.setExpandedText(message.text);
    }
  }

  tick() {
    const now = this.now();
    this.renderStall(now);
    for (const card of this.cards.values()) card.tick(now);
  }

  dispose() {
    for (const [event, fn] of this.listeners) this.model.off(event, fn);
    this.model.off("msg:custom", this.customHandler);
    this.clearTimer(this.timer);
  }
}

/** @type {import("@anywidget/types").Render<RunState>} */
function render({ model, el }) {
  const view = new RunView(model, el);
  return () => view.dispose();
}

/** @type {import("@anywidget/types").AnyWidget<RunState>} */
export default { initialize, render };
