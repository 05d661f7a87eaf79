// @ts-check
// The session-tree widget: a virtualised, foldable tree of session entries with the current
// leaf highlighted, a detail pane for the selected node, search and the navigation actions.
// Rows come a page at a time (tree_model.js: RowCache): the synced page, then `rows` requests
// for what scrolls into view; folds, "all entries", search and reveal are kernel requests.
import { formatCost, formatTokens, h } from "./dom.js";
import { renderItem } from "./items.js";
import { showNotice } from "./notice.js";
import { renderRestoreCard } from "./restore_card.js";
import { BITS, BRANCHING, COST, DEPTH, EDIT_FLAGS, FLAG, FOLDED, FORK, HIDDEN, ID, KIND, LABEL, LAST, MODEL, OFFLINE_MS, PATH, RowCache, TITLE, TOKENS } from "./tree_model.js";

/**
 * @typedef {import("./contract").TreeState} TreeState
 * @typedef {import("./contract").TreeRequest} TreeRequest
 * @typedef {import("./contract").TreeMessage} TreeMessage
 * @typedef {import("./contract").RevealedReply} RevealedReply
 * @typedef {import("@anywidget/types").AnyModel<TreeState>} TreeModel
 */

export const ROW_HEIGHT = 24;
const OVERSCAN = 8;
const DEFAULT_VIEWPORT = 360;

/** @type {Record<import("./contract").NodeKind, string>} */
const KIND_BADGE = {
  user: "U",
  assistant: "A",
  tool_result: "T",
  model_change: "M",
  thinking_change: "θ",
  compaction: "C",
  branch_summary: "B",
  label: "L",
  session_info: "N",
  custom: "X",
  custom_message: "X",
  active_tools: "⚙",
  system: "S",
  context_edit: "E",
  usage: "$",
  message: "•",
  other: "?",
};

// Renders only the rows in (or near) the viewport; the DOM stays small for any tree size.
export class VirtualList {
  /**
   * @param {HTMLElement} scroller
   * @param {(index: number) => HTMLElement} renderRow
   * @param {{ rowHeight?: number }} [options]
   */
  constructor(scroller, renderRow, { rowHeight = ROW_HEIGHT } = {}) {
    this.scroller = scroller;
    this.renderRow = renderRow;
    this.rowHeight = rowHeight;
    this.count = 0;
    this.spacer = h("div", { class: "pi-tree-spacer" });
    this.window = h("div", { class: "pi-tree-window" });
    scroller.replaceChildren(this.spacer, this.window);
    this.pending = false;
    /** @type {((first: number, last: number) => void) | null} Told which rows were drawn. */
    this.onRender = null;
    scroller.addEventListener("scroll", () => this.schedule());
  }

  /** @param {number} count */
  setCount(count) {
    this.count = count;
    this.spacer.style.height = `${count * this.rowHeight}px`;
    this.render();
  }

  // The display rows in (or near) the viewport: [first, last).
  range() {
    const height = this.viewport();
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / this.rowHeight) - OVERSCAN);
    const last = Math.min(this.count, Math.ceil((this.scroller.scrollTop + height) / this.rowHeight) + OVERSCAN);
    return [first, last];
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    const run = () => {
      this.pending = false;
      this.render();
    };
    if (globalThis.requestAnimationFrame) globalThis.requestAnimationFrame(run);
    else setTimeout(run, 16);
  }

  viewport() {
    return this.scroller.clientHeight || DEFAULT_VIEWPORT;
  }

  render() {
    const [first, last] = this.range();
    const children = [];
    for (let i = first; i < last; i++) {
      const el = this.renderRow(i);
      el.style.top = `${i * this.rowHeight}px`;
      children.push(el);
    }
    this.window.replaceChildren(...children);
    this.onRender?.(first, last);
  }

  /** @param {number} index */
  scrollToIndex(index) {
    const top = index * this.rowHeight;
    const height = this.viewport();
    if (top < this.scroller.scrollTop || top + this.rowHeight > this.scroller.scrollTop + height) {
      this.scroller.scrollTop = Math.max(0, top - height / 2);
    }
    this.render();
  }
}

export class SessionTreeView {
  // Made by build(), called from the constructor.
  /** @type {VirtualList} */ list;
  /** @type {ResizeObserver | null} */ resizeObserver = null;
  /** @type {HTMLElement} */ nameEl;
  /** @type {HTMLElement} */ countEl;
  /** @type {HTMLInputElement} */ metaToggle;
  /** @type {HTMLButtonElement} */ leafButton;
  /** @type {HTMLButtonElement} */ foldButton;
  /** @type {HTMLButtonElement} */ compactButton;
  /** @type {HTMLInputElement} */ searchInput;
  /** @type {HTMLElement} */ busyEl;
  /** @type {HTMLElement} */ toolbar;
  /** @type {HTMLElement} */ resultsEl;
  /** @type {HTMLElement} */ offlineEl;
  /** @type {HTMLElement} */ noticeEl;
  /** @type {HTMLElement} */ restoreEl;
  /** @type {HTMLElement} */ scroller;
  /** @type {HTMLElement} */ detailEl;
  /** @type {HTMLElement} */ root;
  // Made by renderDetail() once a node is selected.
  /** @type {HTMLElement | undefined} */ actionsEl;
  /** @type {ReturnType<typeof setTimeout> | null} */ offlineTimer = null;
  /** @type {string | null} The search whose answer is awaited or shown. */ query = null;

  /**
   * @param {TreeModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.cache = new RowCache();
    /** @type {string | null} */
    this.selectedId = model.get("selected_id") || null;
    /** @type {string | null} */
    this.revealedLeaf = null;
    /** @type {RevealedReply | null} */
    this.pendingReveal = null; // an entry to scroll to once its index is known
    this.offline = false;
    this.build(el);
    /** @type {[string, (message?: TreeMessage) => void][]} */
    this.listeners = [];
    /**
     * @param {keyof TreeState} name
     * @param {(this: SessionTreeView) => void} fn
     */
    const on = (name, fn) => {
      const bound = () => fn.call(this);
      model.on(`change:${name}`, bound);
      this.listeners.push([`change:${name}`, bound]);
    };
    on("page", this.onPage);
    on("leaf_id", this.onPage);
    on("session_name", this.renderToolbar);
    on("selected_id", this.onSelected);
    on("selected_detail", this.renderDetail);
    on("controls", this.renderControls);
    on("busy", this.renderControls);
    on("notice", this.renderNotice);
    on("restore", this.renderRestore);
    /** @param {TreeMessage} [message] */
    const onMessage = (message) => this.onMessage(message);
    model.on("msg:custom", onMessage);
    this.listeners.push(["msg:custom", onMessage]);
    this.onPage();
    this.renderDetail();
    this.renderNotice();
    this.renderRestore();
    this.keepLeafInViewOnceShown();
  }

  // A view is built before the page lays it out (a new output, a reopened notebook): scrolling
  // then does nothing, and the current node would sit out of sight until "Go to current". So
  // the leaf is revealed again the first time the tree gets a height.
  keepLeafInViewOnceShown() {
    if (typeof ResizeObserver === "undefined") return;
    this.resizeObserver = new ResizeObserver(() => {
      if (this.scroller.clientHeight === 0) return;
      this.resizeObserver?.disconnect();
      this.resizeObserver = null;
      this.revealLeaf();
    });
    this.resizeObserver.observe(this.scroller);
  }

  /** @param {TreeRequest} message */
  send(message) {
    this.model.send(message);
  }

  /** @param {HTMLElement} el */
  build(el) {
    this.nameEl = h("span", { class: "pi-tree-name" });
    this.countEl = h("span", { class: "pi-tree-count" });
    this.metaToggle = h("input", { type: "checkbox", class: "pi-tree-meta-toggle" });
    this.metaToggle.addEventListener("change", () => this.send({ type: "show_meta", show: this.metaToggle.checked }));
    this.leafButton = h("button", { class: "pi-button", type: "button", text: "Go to current", onclick: () => this.revealLeaf(true) });
    this.foldButton = h("button", { class: "pi-button", type: "button", text: "Fold side branches", onclick: () => this.send({ type: "fold_side" }) });
    this.compactButton = h("button", { class: "pi-button pi-compact", type: "button", text: "Compact", title: "compact the context from the current leaf", onclick: () => this.send({ type: "compact" }) });
    this.searchInput = h("input", { type: "search", class: "pi-tree-search", placeholder: "search entries", "aria-label": "search entries" });
    this.searchInput.addEventListener("keydown", (event) => {
      event.stopPropagation(); // typing here is not a notebook shortcut
      if (event.key === "Enter") this.search(this.searchInput.value);
      if (event.key === "Escape") this.clearSearch();
    });
    this.busyEl = h("span", { class: "pi-tree-busy" });
    this.toolbar = h(
      "div",
      { class: "pi-tree-toolbar" },
      this.nameEl,
      this.countEl,
      h("label", { class: "pi-tree-meta" }, this.metaToggle, " all entries"),
      this.leafButton,
      this.foldButton,
      this.compactButton,
      this.searchInput,
      this.busyEl,
    );
    this.resultsEl = h("div", { class: "pi-tree-results", hidden: true });
    this.offlineEl = h("div", { class: "pi-tree-offline", hidden: true });
    this.noticeEl = h("div", { class: "pi-notice", hidden: true });
    this.restoreEl = h("div", { class: "pi-tree-restore", hidden: true });
    this.scroller = h("div", { class: "pi-tree-scroller", tabindex: 0, role: "tree" });
    this.scroller.addEventListener("keydown", (event) => this.onKey(event));
    this.list = new VirtualList(this.scroller, (index) => this.renderRow(index));
    this.list.onRender = (first, last) => this.fetch(first, last);
    this.detailEl = h("div", { class: "pi-tree-detail" });
    this.root = h("div", { class: "pi-tree" }, this.toolbar, this.resultsEl, this.offlineEl, this.noticeEl, this.restoreEl, h("div", { class: "pi-tree-body" }, this.scroller, this.detailEl));
    el.replaceChildren(this.root);
  }

  // --- rows ----------------------------------------------------------------------------------

  onPage() {
    this.cache.adopt(this.model.get("page"));
    this.metaToggle.checked = this.cache.showMeta;
    this.renderToolbar();
    this.list.setCount(this.cache.total);
    // a new leaf (a run went on, "Continue from here"): bring it into view
    const leaf = this.model.get("leaf_id") || null;
    if (leaf !== this.revealedLeaf) this.revealLeaf();
    this.scrollToPendingReveal();
  }

  /** @param {TreeMessage | null | undefined} message */
  onMessage(message) {
    if (!message || typeof message !== "object") return;
    if (message.type === "rows") {
      if (this.cache.accept(message)) this.list.render();
      this.setOffline(false);
    } else if (message.type === "revealed") {
      this.pendingReveal = message.layout === this.cache.layout ? null : message;
      if (message.layout === this.cache.layout) this.list.scrollToIndex(message.index);
      this.scrollToPendingReveal();
    } else if (message.type === "found") {
      this.renderResults(message);
    }
  }

  scrollToPendingReveal() {
    const pending = this.pendingReveal;
    if (pending && pending.layout === this.cache.layout) {
      this.pendingReveal = null;
      this.list.scrollToIndex(pending.index);
    }
  }

  /**
   * @param {number} first
   * @param {number} last
   */
  fetch(first, last) {
    for (const request of this.cache.requests(first, last)) this.send(request);
    if (!this.cache.answered && !this.offlineTimer && this.cache.pending.size) {
      this.offlineTimer = setTimeout(() => {
        this.offlineTimer = null;
        if (this.cache.offline()) this.setOffline(true);
      }, OFFLINE_MS);
    }
  }

  /** @param {boolean} offline */
  setOffline(offline) {
    if (offline === this.offline) return;
    this.offline = offline;
    const cached = this.cache.cachedCount();
    this.offlineEl.hidden = !offline;
    this.offlineEl.textContent = offline
      ? `This saved tree holds ${cached.toLocaleString("en-US")} of its ${this.cache.total.toLocaleString("en-US")} rows; the rest needs the running kernel (run %tree again).`
      : "";
    this.list.render();
  }

  renderToolbar() {
    const name = this.model.get("session_name") || "";
    this.nameEl.textContent = name ? `Session “${name}”` : "Session";
    this.countEl.textContent = `${this.cache.entries} entries`;
    this.renderControls();
  }

  renderControls() {
    /** @type {Partial<import("./contract").TreeControls>} */
    const controls = this.model.get("controls") || {};
    const busy = this.model.get("busy") || "";
    this.compactButton.hidden = !controls.compact;
    this.compactButton.disabled = Boolean(busy);
    this.busyEl.textContent = busy;
    this.renderDetailActions();
  }

  revealLeaf(scroll = true) {
    const index = this.cache.leafIndex;
    if (index < 0) return;
    this.revealedLeaf = this.model.get("leaf_id") || null;
    if (scroll) this.list.scrollToIndex(index);
    else this.list.render();
  }

  /**
   * @param {string} id
   * @param {boolean} folded
   */
  toggleFold(id, folded) {
    this.send({ type: "fold", id, folded: !folded });
  }

  /**
   * @param {number} index
   * @returns {HTMLElement}
   */
  renderRow(index) {
    const row = this.cache.get(index);
    if (!row) {
      const text = this.offline ? "… not in the saved page (needs the kernel)" : "loading…";
      return h("div", { class: "pi-node pi-node-pending", "data-index": index, text });
    }
    const bits = row[BITS];
    const folded = Boolean(bits & FOLDED);
    const classes = ["pi-node", `pi-node-${row[KIND]}`];
    if (index === this.cache.leafIndex) classes.push("pi-node-leaf");
    else if (bits & PATH) classes.push("pi-node-path");
    if (row[ID] === this.selectedId) classes.push("pi-node-selected");
    if (row[FLAG]) classes.push(`pi-node-${row[FLAG]}`);
    const toggle = bits & (BRANCHING | FOLDED)
      ? h("span", { class: "pi-node-fold", text: folded ? "▸" : "▾", title: folded ? "unfold" : "fold",
          onclick: /** @param {MouseEvent} event */ (event) => { event.stopPropagation(); this.toggleFold(row[ID], folded); } })
      : h("span", { class: "pi-node-fold pi-node-nofold", text: bits & FORK ? (bits & LAST ? "└" : "├") : "" });
    const stats = [];
    if (row[MODEL]) stats.push(row[MODEL]);
    if (row[TOKENS]) stats.push(`${formatTokens(row[TOKENS])} tok`);
    if (row[COST]) stats.push(formatCost(row[COST]));
    const el = h(
      "div",
      { class: classes.join(" "), "data-id": row[ID], "data-index": index, role: "treeitem", title: `${row[KIND]} ${row[ID]}` },
      toggle,
      h("span", { class: "pi-node-kind", text: KIND_BADGE[row[KIND]] || "•" }),
      h("span", { class: "pi-node-title", text: row[TITLE] || row[KIND] }),
      row[LABEL] ? h("span", { class: "pi-node-label", text: row[LABEL] }) : null,
      EDIT_FLAGS[row[FLAG]] ? h("span", { class: "pi-node-edit", text: row[FLAG], title: EDIT_FLAGS[row[FLAG]] }) : null,
      folded ? h("span", { class: "pi-node-hidden", text: `+${row[HIDDEN].toLocaleString("en-US")}`, title: `${row[HIDDEN]} entries folded` }) : null,
      index === this.cache.leafIndex ? h("span", { class: "pi-node-here", text: "● current" }) : null,
      stats.length ? h("span", { class: "pi-node-stats", text: stats.join(" · ") }) : null,
    );
    el.style.paddingLeft = `${6 + row[DEPTH] * 16}px`;
    el.addEventListener("click", () => this.select(row[ID]));
    return el;
  }

  // --- search --------------------------------------------------------------------------------

  /** @param {string} query */
  search(query) {
    query = query.trim();
    if (!query) return this.clearSearch();
    this.query = query;
    this.resultsEl.hidden = false;
    this.resultsEl.replaceChildren(h("div", { class: "pi-muted", text: `searching for “${query}”…` }));
    this.send({ type: "search", query });
  }

  clearSearch() {
    this.query = null;
    this.searchInput.value = "";
    this.resultsEl.hidden = true;
    this.resultsEl.replaceChildren();
  }

  /** @param {import("./contract").FoundReply} found */
  renderResults(found) {
    if (found.query !== this.query) return; // an older search's answer
    const matches = found.matches || [];
    const more = found.total > matches.length ? `, the first ${matches.length} shown` : "";
    const items = matches.map(([id, kind, title, label]) =>
      h("div", { class: "pi-tree-result", "data-id": id, role: "button", tabindex: 0,
          onclick: () => this.revealEntry(id) },
        h("span", { class: "pi-node-kind", text: KIND_BADGE[kind] || "•" }),
        h("span", { class: "pi-node-title", text: title || kind }),
        label ? h("span", { class: "pi-node-label", text: label }) : null),
    );
    const head = h("div", { class: "pi-tree-results-head" },
      h("span", { text: `${found.total} match${found.total === 1 ? "" : "es"} for “${found.query}”${more}` }),
      h("button", { class: "pi-button pi-tree-results-close", type: "button", text: "×", title: "close", onclick: () => this.clearSearch() }));
    this.resultsEl.replaceChildren(head, ...items);
  }

  // Unfold what hides an entry, scroll to it and select it (the kernel answers with its index).
  /** @param {string} id */
  revealEntry(id) {
    this.selectedId = id;
    this.renderDetail();
    this.send({ type: "reveal", id });
  }

  // --- selection and detail ------------------------------------------------------------------

  /** @param {string} id */
  select(id) {
    if (!id) return;
    this.selectedId = id;
    this.list.render();
    this.renderDetail();
    this.send({ type: "select", id });
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    event.stopPropagation();
    const index = this.cache.indexOf(this.selectedId);
    const next = index === undefined ? 0 : index + (event.key === "ArrowDown" ? 1 : -1);
    if (next < 0 || next >= this.cache.total) return;
    this.list.scrollToIndex(next);
    const row = this.cache.get(next);
    if (row) this.select(row[ID]);
  }

  // The kernel selected a node (a click's answer, or `view.select(...)` from Python).
  onSelected() {
    const synced = this.model.get("selected_id") || null;
    if (synced === this.selectedId) return;
    this.selectedId = synced;
    const index = synced === null ? undefined : this.cache.indexOf(synced);
    if (index !== undefined) this.list.scrollToIndex(index);
    else this.list.render();
    this.renderDetail();
  }

  selectedRow() {
    const index = this.cache.indexOf(this.selectedId);
    return index === undefined ? undefined : this.cache.get(index);
  }

  renderDetail() {
    /** @type {import("./contract").OrEmpty<import("./contract").NodeDetail>} */
    const detail = this.model.get("selected_detail") || {};
    this.detailEl.replaceChildren();
    if (!this.selectedId) {
      this.detailEl.append(h("div", { class: "pi-muted", text: "Select a node to see its message and actions." }));
      return;
    }
    const row = this.selectedRow();
    const title = row ? row[TITLE] : detail.id === this.selectedId ? detail.title : this.selectedId;
    this.detailEl.append(h("div", { class: "pi-detail-title", text: title || "" }));
    this.actionsEl = h("div", { class: "pi-detail-actions" });
    this.detailEl.append(this.actionsEl);
    this.renderDetailActions();
    if (detail.id !== this.selectedId) {
      this.detailEl.append(h("div", { class: "pi-muted", text: "loading…" }));
      return;
    }
    const meta = [detail.type, detail.id, detail.timestamp, detail.model, detail.tokens ? `${formatTokens(detail.tokens)} tokens` : "", detail.cost ? formatCost(detail.cost) : ""].filter(Boolean);
    this.detailEl.append(h("div", { class: "pi-detail-meta", text: meta.join(" · ") }));
    /** @type {import("./items.js").Cards} */
    const cards = new Map();
    const body = h("div", { class: "pi-detail-body" });
    for (const item of detail.items || []) {
      const el = renderItem(item, cards, {});
      if (el) body.append(el);
    }
    if (detail.text) body.append(h("pre", { class: "pi-pre", text: detail.text }));
    this.detailEl.append(body);
  }

  renderDetailActions() {
    if (!this.actionsEl || !this.selectedId) return;
    /** @type {Partial<import("./contract").TreeControls>} */
    const controls = this.model.get("controls") || {};
    const busy = Boolean(this.model.get("busy"));
    const id = this.selectedId;
    const parts = [];
    if (controls.navigate) {
      const summarize = h("input", { type: "checkbox", class: "pi-summarize" });
      parts.push(
        h("button", { class: "pi-button pi-navigate", type: "button", text: "Continue from here", disabled: busy,
          onclick: () => this.send({ type: "navigate", id, summarize: summarize.checked }) }),
        h("label", { class: "pi-summarize-label" }, summarize, " with branch summary"),
      );
    }
    if (controls.fork) {
      parts.push(h("button", { class: "pi-button pi-fork", type: "button", text: "Fork to new session", disabled: busy,
        onclick: () => this.send({ type: "fork", id }) }));
    }
    if (controls.label) {
      const row = this.selectedRow();
      const input = h("input", { type: "text", class: "pi-label-input", placeholder: "label", value: (row && row[LABEL]) || "" });
      input.addEventListener("keydown", (event) => event.stopPropagation());
      parts.push(input, h("button", { class: "pi-button pi-label-set", type: "button", text: "Set label", disabled: busy,
        onclick: () => this.send({ type: "label", id, text: input.value.trim() }) }));
    }
    this.actionsEl.replaceChildren(...parts);
  }

  // The card a move offers (restore the variables and cells as they were at the node moved to):
  // above the tree, so it is seen whichever node is selected.
  renderRestore() {
    /** @type {import("./contract").OrEmpty<import("./contract").RestoreCard>} */
    const card = this.model.get("restore") || {};
    this.restoreEl.hidden = !card.id;
    if (!card.id) {
      this.restoreEl.replaceChildren();
      return;
    }
    /** @type {import("./restore_card.js").DecideRestore} */
    const decide = (cardId, allow, revertDocument) => this.send({ type: "restore", card_id: cardId, allow, revert_document: revertDocument });
    this.restoreEl.replaceChildren(renderRestoreCard(card, decide));
  }

  renderNotice() {
    showNotice(this.noticeEl, this.model.get("notice") || "", () => this.send({ type: "dismiss_notice" }));
  }

  dispose() {
    for (const [event, fn] of this.listeners) this.model.off(event, fn);
    this.resizeObserver?.disconnect();
    if (this.offlineTimer) clearTimeout(this.offlineTimer);
  }
}

/** @type {import("@anywidget/types").Render<TreeState>} */
function render({ model, el }) {
  const view = new SessionTreeView(model, el);
  return () => view.dispose();
}

/** @type {import("@anywidget/types").AnyWidget<TreeState>} */
export default { render };
