// @ts-check
// Rendering of transcript items (the shapes of pi_notebook/notebook/widgets/protocol.py):
// user and assistant messages, notes, tool cards and rich (mime bundle) tool results.
import { formatCost, formatDuration, formatTokens, h } from "./dom.js";
import { MarkdownStream, renderMarkdownInto } from "./markdown.js";
import { sanitizeRichHtml } from "./sanitize.js";

/**
 * @typedef {import("./contract").ApprovalPreview} ApprovalPreview
 * @typedef {import("./contract").AssistantItem} AssistantItem
 * @typedef {import("./contract").Block} Block
 * @typedef {import("./contract").ChangeReview} ChangeReview
 * @typedef {import("./contract").ImageData} ImageData
 * @typedef {import("./contract").MimeBundle} MimeBundle
 * @typedef {import("./contract").NoteItem} NoteItem
 * @typedef {import("./contract").RunningTool} RunningTool
 * @typedef {import("./contract").ToolApproval} ToolApproval
 * @typedef {import("./contract").ToolResultItem} ToolResultItem
 * @typedef {import("./contract").TranscriptItem} TranscriptItem
 * @typedef {import("./contract").UserItem} UserItem
 */

/**
 * What a tool card tells its view: an approval answer, a request for a result's whole text.
 * @typedef {{ onApproval?: (id: string, allow: boolean, always?: boolean) => void, onExpand?: (id: string) => void }} CardHandlers
 */

/** @typedef {Map<string, ToolCard>} Cards Tool cards by tool call id. */

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/**
 * @param {string} mimeType
 * @param {string} data base64
 */
function imageElement(mimeType, data) {
  return h("img", { class: "pi-image", src: `data:${mimeType};base64,${data.replace(/\s+/g, "")}` });
}

/** @param {string} svg */
function svgElement(svg) {
  // As an <img>, SVG cannot run scripts or reach the page.
  return h("img", { class: "pi-image", src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}` });
}

/** @param {ImageData[] | null | undefined} images */
export function renderImages(images) {
  if (!images || images.length === 0) return null;
  return h("div", { class: "pi-images" }, images.map((img) => imageElement(img.mime_type, img.data)));
}

// The richest representation of a Jupyter mime bundle: HTML (sanitised, in a shadow root so its
// styles stay inside), Markdown, images, then plain text. Returns null for an empty bundle.
/**
 * @param {MimeBundle | null | undefined} bundle
 * @returns {HTMLElement | null}
 */
export function renderMimeBundle(bundle) {
  if (!bundle) return null;
  if (typeof bundle["text/html"] === "string") {
    const host = h("div", { class: "pi-rich-html" });
    const root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
    root.innerHTML = sanitizeRichHtml(bundle["text/html"]);
    return host;
  }
  if (typeof bundle["text/markdown"] === "string") {
    const el = h("div", { class: "pi-md" });
    renderMarkdownInto(el, bundle["text/markdown"]);
    return el;
  }
  for (const type of IMAGE_TYPES) {
    if (typeof bundle[type] === "string") return h("div", { class: "pi-images" }, imageElement(type, bundle[type]));
  }
  if (typeof bundle["image/svg+xml"] === "string") return h("div", { class: "pi-images" }, svgElement(bundle["image/svg+xml"]));
  if (typeof bundle["text/plain"] === "string") return h("pre", { class: "pi-pre", text: bundle["text/plain"] });
  return null;
}

/**
 * @param {string} text
 * @param {number} [max]
 */
function oneLine(text, max = 90) {
  const flat = String(text || "").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** @type {Partial<Record<import("./contract").ApprovalState, string>>} */
const APPROVAL_TEXT = {
  allowed: "Allowed.",
  denied: "Denied.",
  cancelled: "The approval request was cancelled.",
};

// What a tool call proposes (a notebook write tool's cell source, or a diff for an edit), shown
// on its approval card: open while the user decides, folded once they have.
/**
 * @param {Partial<ApprovalPreview>} preview
 * @param {boolean} open
 */
export function renderPreview(preview, open) {
  let body;
  if (preview.diff) {
    body = h("pre", { class: "pi-pre pi-diff" });
    for (const line of String(preview.diff).split("\n")) {
      let kind = "pi-diff-context";
      if (line.startsWith("+++") || line.startsWith("---")) kind = "pi-diff-file";
      else if (line.startsWith("@@")) kind = "pi-diff-hunk";
      else if (line.startsWith("+")) kind = "pi-diff-add";
      else if (line.startsWith("-")) kind = "pi-diff-del";
      body.append(h("span", { class: kind, text: `${line}\n` }));
    }
  } else {
    body = h("pre", { class: "pi-pre pi-approval-source", "data-language": preview.language || "", text: preview.source || "" });
  }
  const label = preview.diff ? "diff against the cell's source" : preview.language === "markdown" ? "markdown" : "source";
  const details = h("details", { class: "pi-approval-preview" }, h("summary", { text: label }), body);
  details.open = Boolean(open);
  return details;
}

/** @type {Partial<Record<import("./contract").ReviewDecision, string>>} */
const DECISION_TEXT = { accepted: "Accepted", rejected: "Rejected" };

// Several cell changes of one reply (protocol.ChangeReview), decided on one card: each
// change shows its source or diff with Accept / Reject; nothing is written before all are
// decided. `onDecide(reviewId, accept, toolCallId)` sends a decision (no id: every undecided one).
/**
 * @param {ChangeReview} review
 * @param {(reviewId: string, accept: boolean, toolCallId: string | null) => void} onDecide
 */
export function renderReview(review, onDecide) {
  const changes = review.changes || [];
  const undecided = changes.filter((c) => c.decision === "pending").length;
  const rows = changes.map((change, index) => {
    /** @type {Partial<ApprovalPreview>} */
    const preview = change.preview || {};
    const head = h(
      "div",
      { class: "pi-review-change-head" },
      h("span", { class: "pi-review-number", text: `${index + 1}.` }),
      h("span", { class: "pi-review-title", text: preview.title || change.tool_name }),
    );
    let decision;
    if (change.decision === "pending") {
      const accept = h("button", { class: "pi-button pi-allow pi-review-accept", type: "button", text: "Accept" });
      const reject = h("button", { class: "pi-button pi-deny pi-review-reject", type: "button", text: "Reject" });
      /** @param {boolean} value */
      const answer = (value) => {
        accept.disabled = true;
        reject.disabled = true;
        onDecide(review.id, value, change.tool_call_id);
      };
      accept.addEventListener("click", () => answer(true));
      reject.addEventListener("click", () => answer(false));
      decision = h("div", { class: "pi-approval-buttons" }, accept, reject);
    } else {
      decision = h("span", { class: `pi-review-decision pi-review-${change.decision}`, text: DECISION_TEXT[change.decision] || change.decision });
    }
    return h(
      "div",
      { class: `pi-review-change pi-review-change-${change.decision}`, "data-tool-call-id": change.tool_call_id },
      head,
      renderPreview(preview, change.decision === "pending"),
      decision,
    );
  });
  const all = [];
  if (undecided > 0) {
    const rest = undecided === changes.length ? `all ${undecided}` : `the ${undecided} left`;
    const acceptAll = h("button", { class: "pi-button pi-allow pi-review-accept-all", type: "button", text: `Accept ${rest}` });
    const rejectAll = h("button", { class: "pi-button pi-deny pi-review-reject-all", type: "button", text: `Reject ${rest}` });
    /** @param {boolean} value */
    const answer = (value) => {
      acceptAll.disabled = true;
      rejectAll.disabled = true;
      onDecide(review.id, value, null);
    };
    acceptAll.addEventListener("click", () => answer(true));
    rejectAll.addEventListener("click", () => answer(false));
    all.push(acceptAll, rejectAll);
  }
  const hint = review.timeout ? ` No answer within ${review.timeout} s rejects them all.` : "";
  return h(
    "div",
    { class: "pi-review", "data-review-id": review.id },
    h("div", { class: "pi-review-question", text: `Review ${changes.length} changes to the notebook: nothing is changed until each is accepted or rejected.${hint}` }),
    ...rows,
    all.length ? h("div", { class: "pi-approval-buttons pi-review-all" }, ...all) : null,
  );
}

// One tool call: its name and arguments (streaming in), progress, approval and result.
export class ToolCard {
  /**
   * @param {string} id
   * @param {string} name
   * @param {CardHandlers} [callbacks]
   */
  constructor(id, name, { onApproval, onExpand } = {}) {
    this.id = id;
    this.onApproval = onApproval;
    this.onExpand = onExpand;
    /** @type {number | null} */
    this.startedAt = null;
    /** @type {string | undefined} The approval as last rendered (JSON). */
    this.approvalKey = undefined;
    this.finished = false;
    this.nameEl = h("span", { class: "pi-tool-name", text: name || "tool" });
    this.stateEl = h("span", { class: "pi-tool-state", text: "preparing…" });
    this.argsSummary = h("span", { class: "pi-tool-args-preview" });
    this.argsPre = h("pre", { class: "pi-pre pi-tool-args-text" });
    this.argsEl = h("details", { class: "pi-tool-args" }, h("summary", {}, "arguments ", this.argsSummary), this.argsPre);
    this.progressEl = h("div", { class: "pi-tool-progress" });
    this.approvalEl = h("div", { class: "pi-tool-approval" });
    this.resultEl = h("div", { class: "pi-tool-result" });
    this.el = h(
      "div",
      { class: "pi-tool pi-tool-pending", "data-tool-call-id": id },
      h("div", { class: "pi-tool-head" }, h("span", { class: "pi-tool-icon" }), this.nameEl, this.stateEl),
      this.argsEl,
      this.progressEl,
      this.approvalEl,
      this.resultEl,
    );
  }

  /**
   * @param {"pending" | "running" | "approval-wait" | "ok" | "error"} kind
   * @param {string} text
   */
  setState(kind, text) {
    this.el.classList.remove("pi-tool-pending", "pi-tool-running", "pi-tool-approval-wait", "pi-tool-ok", "pi-tool-error");
    this.el.classList.add(`pi-tool-${kind}`);
    this.stateEl.textContent = text;
  }

  /** @param {{ name?: string, args: string, complete: boolean }} call */
  setCall({ name, args, complete }) {
    if (name) this.nameEl.textContent = name;
    if (this.argsPre.textContent !== args) {
      this.argsPre.textContent = args;
      this.argsSummary.textContent = oneLine(args);
    }
    if (!this.finished && this.startedAt === null) this.setState("pending", complete ? "queued" : "preparing…");
  }

  /** @param {RunningTool | undefined} entry */
  setRunning(entry) {
    if (this.finished) return;
    if (!entry) return;
    this.startedAt = entry.started_at;
    if (entry.args && !this.argsPre.textContent) this.setCall({ args: entry.args, complete: true });
    const approval = entry.approval;
    if (approval && approval.state === "pending") this.setState("approval-wait", "waiting for approval");
    else this.setState("running", "running…");
    this.tick(Date.now());
    this.progressEl.replaceChildren(
      ...[renderMimeBundle(entry.progress_bundle), entry.progress ? h("pre", { class: "pi-pre", text: entry.progress }) : null,
        renderImages(entry.progress_images)].filter((el) => el !== null).slice(0, 1),
    );
    this.renderApproval(approval);
  }

  /** @param {ToolApproval | null | undefined} approval */
  renderApproval(approval) {
    // Re-rendered only when the approval changes: a sync of the card's progress must not
    // rebuild the buttons under the user's pointer.
    const key = approval ? JSON.stringify(approval) : "";
    if (key === this.approvalKey) return;
    this.approvalKey = key;
    if (!approval) {
      this.approvalEl.replaceChildren();
      return;
    }
    const preview = approval.preview || null;
    if (approval.state === "pending" && approval.review) {
      this.approvalEl.replaceChildren(h("span", { class: "pi-approval-question", text: "Part of the review of this reply's changes (below)." }));
      return;
    }
    if (approval.state === "pending") {
      const allow = h("button", { class: "pi-button pi-allow", type: "button", text: "Allow" });
      const deny = h("button", { class: "pi-button pi-deny", type: "button", text: "Deny" });
      const buttons = [allow, deny];
      if (preview && preview.always) {
        buttons.push(h("button", { class: "pi-button pi-allow-always", type: "button", text: "Always allow for this session" }));
      }
      /**
       * @param {boolean} value
       * @param {boolean} always
       */
      const answer = (value, always) => {
        for (const button of buttons) button.disabled = true;
        if (!this.onApproval) return;
        if (always) this.onApproval(this.id, value, true);
        else this.onApproval(this.id, value);
      };
      allow.addEventListener("click", () => answer(true, false));
      deny.addEventListener("click", () => answer(false, false));
      if (buttons[2]) buttons[2].addEventListener("click", () => answer(true, true));
      const hint = approval.timeout ? ` (no answer within ${approval.timeout} s counts as timed out)` : "";
      const question = preview ? `${preview.title}?${hint}` : `Run this tool call?${hint}`;
      this.approvalEl.replaceChildren(
        h("span", { class: "pi-approval-question", text: question }),
        ...(preview ? [renderPreview(preview, true)] : []),
        h("div", { class: "pi-approval-buttons" }, ...buttons),
      );
      return;
    }
    let text = APPROVAL_TEXT[approval.state] || approval.state;
    if (approval.state === "timed_out") text = `No answer within ${approval.timeout} s: the request timed out.`;
    if (approval.reason) text = `${text} ${approval.reason}`;
    this.approvalEl.replaceChildren(
      h("span", { class: `pi-approval-${approval.state}`, text }),
      ...(preview ? [renderPreview(preview, false)] : []),
    );
  }

  /** @param {number} now epoch milliseconds */
  tick(now) {
    if (this.finished || this.startedAt === null) return;
    const base = this.el.classList.contains("pi-tool-approval-wait") ? "waiting for approval" : "running";
    this.stateEl.textContent = `${base} · ${formatDuration(now - this.startedAt)}`;
  }

  /** @param {ToolResultItem} item */
  setResult(item) {
    this.finished = true;
    if (item.tool_name) this.nameEl.textContent = item.tool_name;
    const duration = item.duration_ms === null || item.duration_ms === undefined ? "" : ` · ${formatDuration(item.duration_ms)}`;
    this.setState(item.is_error ? "error" : "ok", `${item.is_error ? "failed" : "done"}${duration}`);
    this.progressEl.replaceChildren();
    this.renderApproval(item.approval && item.approval.state !== "pending" ? item.approval : null);
    const parts = [];
    const rich = item.is_error ? null : renderMimeBundle(item.mime_bundle);
    if (rich) parts.push(rich);
    else if (item.text) parts.push(h("pre", { class: item.is_error ? "pi-pre pi-tool-error-text" : "pi-pre", text: item.text }));
    // A rich bundle already shows the tool's images; the content images are the model's copy.
    const images = rich ? null : renderImages(item.images);
    if (images) parts.push(images);
    if (!rich && item.text_length > (item.text || "").length) {
      const more = h("button", { class: "pi-button pi-expand", type: "button", text: `Show all (${formatTokens(item.text_length)} characters)` });
      more.addEventListener("click", () => {
        more.disabled = true;
        more.textContent = "loading…";
        if (this.onExpand) this.onExpand(this.id);
      });
      parts.push(more);
    }
    if (parts.length === 0) parts.push(h("div", { class: "pi-muted", text: "(no output)" }));
    this.resultEl.replaceChildren(...parts);
  }

  /** @param {string} text */
  setExpandedText(text) {
    this.resultEl.replaceChildren(h("pre", { class: "pi-pre", text }));
  }
}

/** @type {Partial<Record<import("./contract").Origin, string>>} */
const ORIGIN_LABEL = { steer: "steering", follow_up: "follow-up", user: "injected" };

/** @param {UserItem} item */
export function renderUserItem(item) {
  const label = ORIGIN_LABEL[item.origin];
  return h(
    "div",
    { class: `pi-msg pi-user pi-origin-${item.origin || "prompt"}`, "data-item-id": item.id },
    label ? h("span", { class: "pi-badge", text: label }) : null,
    h("div", { class: "pi-user-text", text: item.text }),
    renderImages(item.images),
  );
}

/** @param {NoteItem} item */
export function renderNoteItem(item) {
  const body = h("div", { class: "pi-md" });
  renderMarkdownInto(body, item.text);
  return h(
    "details",
    { class: `pi-msg pi-note pi-note-${item.role}`, "data-item-id": item.id },
    h("summary", { text: item.title }),
    body,
  );
}

// A run a spending cap ended: the harness never sent this request, and its reason says which cap.
/** @param {AssistantItem} item */
export function isBudgetStop(item) {
  return (item.error_message || "").startsWith("Budget: ");
}

/**
 * @param {AssistantItem} item
 * @returns {string}
 */
export function stopReasonText(item) {
  if (item.stop_reason === "aborted" && item.error_message && isBudgetStop(item)) return item.error_message;
  if (item.stop_reason === "aborted") return "Stopped. The partial reply above is kept.";
  if (item.stop_reason === "error") return `The model request failed: ${item.error_message || "unknown error"}`;
  if (item.stop_reason === "length") return "The reply was cut off: the model reached its output token limit.";
  return "";
}

/** @param {AssistantItem} item */
function usageLine(item) {
  const u = item.usage;
  if (!u || !(u.input || u.output)) return null;
  const cache = u.cache_read || u.cache_write ? ` · cache ${formatTokens(u.cache_read)} read / ${formatTokens(u.cache_write)} write` : "";
  return h("div", { class: "pi-msg-usage", text: `${formatTokens(u.input)} in · ${formatTokens(u.output)} out${cache} · ${formatCost(u.cost)}` });
}

// An assistant message whose blocks are rendered once (finished) or kept updatable (streaming).
/**
 * A rendered block: text and thinking keep their markdown (streamed or whole); a tool call is
 * its card.
 * @typedef {{ type: "text", el: HTMLElement, stream: MarkdownStream | null, text: string | null }} TextSlot
 * @typedef {{ type: "thinking", el: HTMLElement, body: HTMLElement, summary: HTMLElement, stream: MarkdownStream | null, text: string | null }} ThinkingSlot
 * @typedef {{ type: "toolCall", el: HTMLElement, card: ToolCard }} ToolCallSlot
 * @typedef {TextSlot | ThinkingSlot | ToolCallSlot} BlockSlot
 */
export class AssistantView {
  /**
   * @param {AssistantItem} item
   * @param {Cards} cards
   * @param {CardHandlers} handlers
   */
  constructor(item, cards, handlers) {
    this.cards = cards;
    this.handlers = handlers;
    /** @type {BlockSlot[]} */
    this.blockEls = [];
    this.blocksEl = h("div", { class: "pi-blocks" });
    this.footEl = h("div", { class: "pi-msg-foot" });
    this.el = h("div", { class: "pi-msg pi-assistant", "data-item-id": item.id }, this.blocksEl, this.footEl);
    this.streaming = item.stop_reason === null || item.stop_reason === undefined;
    if (this.streaming) this.el.classList.add("pi-streaming");
    this.update(item);
  }

  /** @param {AssistantItem} item */
  update(item) {
    const blocks = item.blocks || [];
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i];
      /** @type {BlockSlot | undefined} */
      let slot = this.blockEls[i];
      if (slot && slot.type !== block.type) {
        slot.el.remove();
        slot = undefined;
      }
      if (!slot) {
        slot = this.createBlock(block);
        this.blockEls[i] = slot;
        this.blocksEl.append(slot.el);
      }
      this.updateBlock(slot, block);
    }
    for (let i = blocks.length; i < this.blockEls.length; i++) this.blockEls[i].el.remove();
    this.blockEls.length = Math.min(this.blockEls.length, blocks.length);
    const reason = stopReasonText(item);
    const foot = [];
    if (reason) foot.push(h("div", { class: `pi-stop pi-stop-${item.stop_reason}`, text: reason }));
    const usage = this.streaming ? null : usageLine(item);
    if (usage) foot.push(usage);
    this.footEl.replaceChildren(...foot);
  }

  /**
   * @param {Block} block
   * @returns {BlockSlot}
   */
  createBlock(block) {
    if (block.type === "text") {
      const el = h("div", { class: "pi-text" });
      return { type: "text", el, stream: this.streaming ? new MarkdownStream(el) : null, text: null };
    }
    if (block.type === "thinking") {
      const body = h("div", { class: "pi-thinking-body" });
      const summary = h("summary", { text: "Thinking" });
      const el = h("details", { class: "pi-thinking" }, summary, body);
      if (this.streaming) el.open = true;
      return { type: "thinking", el, body, summary, stream: this.streaming ? new MarkdownStream(body) : null, text: null };
    }
    let card = this.cards.get(block.id);
    if (!card) {
      card = new ToolCard(block.id, block.name, this.handlers);
      this.cards.set(block.id, card);
    }
    return { type: "toolCall", el: card.el, card };
  }

  /**
   * @param {BlockSlot} slot
   * @param {Block} block of the slot's type
   */
  updateBlock(slot, block) {
    if (slot.type === "toolCall" || block.type === "toolCall") {
      if (slot.type === "toolCall" && block.type === "toolCall") slot.card.setCall({ name: block.name, args: block.args, complete: block.complete });
      return;
    }
    const text = block.text || "";
    if (slot.text === text) return;
    slot.text = text;
    if (slot.type === "thinking") {
      slot.summary.textContent = block.type === "thinking" && block.redacted ? "Thinking (redacted)" : this.streaming ? "Thinking…" : "Thinking";
    }
    const target = slot.type === "thinking" ? slot.body : slot.el;
    if (slot.stream) slot.stream.update(text);
    else renderMarkdownInto(target, text);
  }
}

/**
 * @param {TranscriptItem} item
 * @param {Cards} cards
 * @param {CardHandlers} handlers
 * @returns {HTMLElement | null} null for a tool result shown in the card of its call
 */
export function renderItem(item, cards, handlers) {
  switch (item.kind) {
    case "user":
      return renderUserItem(item);
    case "assistant":
      return new AssistantView(item, cards, handlers).el;
    case "note":
      return renderNoteItem(item);
    case "tool_result": {
      let card = cards.get(item.tool_call_id);
      if (card) {
        card.setResult(item);
        return null; // shown inside the card of its call
      }
      card = new ToolCard(item.tool_call_id, item.tool_name, handlers);
      cards.set(item.tool_call_id, card);
      card.setResult(item);
      return card.el;
    }
    default:
      return h("div", { class: "pi-msg pi-unknown", text: JSON.stringify(item) });
  }
}
