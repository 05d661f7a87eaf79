// The session-tree widget: a virtualised, foldable tree of session entries with the current
// leaf highlighted, a detail pane for the selected node and the navigation actions.
import { formatCost, formatTokens, h } from "./dom.js";
import { renderItem } from "./items.js";
import { showNotice } from "./notice.js";
import { COST, EDIT_FLAGS, FLAG, KIND, MODEL, TITLE, TOKENS, activePath, buildTree, flatten, foldOffPath, reveal } from "./tree_model.js";

export const ROW_HEIGHT = 24;
const OVERSCAN = 8;
const DEFAULT_VIEWPORT = 360;

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
  constructor(scroller, renderRow, { rowHeight = ROW_HEIGHT } = {}) {
    this.scroller = scroller;
    this.renderRow = renderRow;
    this.rowHeight = rowHeight;
    this.rows = [];
    this.spacer = h("div", { class: "pi-tree-spacer" });
    this.window = h("div", { class: "pi-tree-window" });
    scroller.replaceChildren(this.spacer, this.window);
    this.pending = false;
    scroller.addEventListener("scroll", () => this.schedule());
  }

  setRows(rows) {
    this.rows = rows;
    this.spacer.style.height = `${rows.length * this.rowHeight}px`;
    this.render();
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
    const height = this.viewport();
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / this.rowHeight) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((this.scroller.scrollTop + height) / this.rowHeight) + OVERSCAN);
    const children = [];
    for (let i = first; i < last; i++) {
      const el = this.renderRow(this.rows[i], i);
      el.style.top = `${i * this.rowHeight}px`;
      children.push(el);
    }
    this.window.replaceChildren(...children);
  }

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
  constructor(model, el) {
    this.model = model;
    this.folded = new Set();
    this.showMeta = false;
    this.selectedId = model.get("selected_id") || null;
    this.tree = null;
    this.rows = [];
    this.indexById = new Map();
    this.path = new Set();
    this.leafId = null;
    this.revealedLeaf = null;
    this.build(el);
    this.listeners = [];
    const on = (names, fn) => {
      for (const name of names) {
        const bound = () => fn.call(this);
        model.on(`change:${name}`, bound);
        this.listeners.push([`change:${name}`, bound]);
      }
    };
    on(["nodes", "tail"], this.rebuild);
    on(["labels"], this.renderList);
    on(["leaf_id"], this.onLeaf);
    on(["session_name"], this.renderToolbar);
    on(["selected_id"], this.onSelected);
    on(["selected_detail"], this.renderDetail);
    on(["controls", "busy"], this.renderControls);
    on(["notice"], this.renderNotice);
    this.rebuild();
    this.revealLeaf();
    this.renderDetail();
    this.renderNotice();
    this.keepLeafInViewOnceShown();
  }

  // A view is built before the page lays it out (a new output, a reopened notebook): scrolling
  // then does nothing, and the current node would sit out of sight until "Go to current". So
  // the leaf is revealed again the first time the tree gets a height.
  keepLeafInViewOnceShown() {
    if (typeof ResizeObserver === "undefined") return;
    this.resizeObserver = new ResizeObserver(() => {
      if (this.scroller.clientHeight === 0) return;
      this.resizeObserver.disconnect();
      this.resizeObserver = null;
      this.revealLeaf();
    });
    this.resizeObserver.observe(this.scroller);
  }

  send(message) {
    this.model.send(message);
  }

  build(el) {
    this.nameEl = h("span", { class: "pi-tree-name" });
    this.countEl = h("span", { class: "pi-tree-count" });
    this.metaToggle = h("input", { type: "checkbox", class: "pi-tree-meta-toggle" });
    this.metaToggle.addEventListener("change", () => {
      this.showMeta = this.metaToggle.checked;
      this.rebuild();
    });
    this.leafButton = h("button", { class: "pi-button", type: "button", text: "Go to current", onclick: () => this.revealLeaf(true) });
    this.foldButton = h("button", { class: "pi-button", type: "button", text: "Fold side branches", onclick: () => this.foldSideBranches() });
    this.compactButton = h("button", { class: "pi-button pi-compact", type: "button", text: "Compact", title: "compact the context from the current leaf", onclick: () => this.send({ type: "compact" }) });
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
      this.busyEl,
    );
    this.noticeEl = h("div", { class: "pi-notice", hidden: true });
    this.scroller = h("div", { class: "pi-tree-scroller", tabindex: 0, role: "tree" });
    this.scroller.addEventListener("keydown", (event) => this.onKey(event));
    this.list = new VirtualList(this.scroller, (row) => this.renderRow(row));
    this.detailEl = h("div", { class: "pi-tree-detail" });
    this.root = h("div", { class: "pi-tree" }, this.toolbar, this.noticeEl, h("div", { class: "pi-tree-body" }, this.scroller, this.detailEl));
    el.replaceChildren(this.root);
  }

  allRows() {
    const nodes = this.model.get("nodes") || [];
    const tail = this.model.get("tail") || [];
    return tail.length ? nodes.concat(tail) : nodes;
  }

  rebuild() {
    this.tree = buildTree(this.allRows(), { showMeta: this.showMeta });
    this.computePath();
    this.renderToolbar();
    this.renderList();
    // a new branch: the leaf may have moved before its node arrived
    if (this.leafId !== this.revealedLeaf) this.revealLeaf();
  }

  computePath() {
    const { path, leafId } = activePath(this.tree, this.model.get("leaf_id") || null);
    this.path = path;
    this.leafId = leafId;
  }

  onLeaf() {
    this.computePath();
    this.renderToolbar();
    this.revealLeaf();
  }

  renderToolbar() {
    const name = this.model.get("session_name") || "";
    this.nameEl.textContent = name ? `Session “${name}”` : "Session";
    const total = this.tree ? this.tree.byId.size : 0;
    this.countEl.textContent = `${total} entries`;
    this.renderControls();
  }

  renderControls() {
    const controls = this.model.get("controls") || {};
    const busy = this.model.get("busy") || "";
    this.compactButton.hidden = !controls.compact;
    this.compactButton.disabled = Boolean(busy);
    this.busyEl.textContent = busy;
    this.renderDetailActions();
  }

  renderList() {
    this.rows = flatten(this.tree, this.folded);
    this.indexById = new Map(this.rows.map((row, index) => [row.node.id, index]));
    this.list.setRows(this.rows);
  }

  revealLeaf(scroll = true) {
    if (!this.leafId) return;
    if (reveal(this.tree, this.leafId, this.folded)) this.renderList();
    const index = this.indexById.get(this.leafId);
    if (index !== undefined) this.revealedLeaf = this.leafId;
    if (scroll && index !== undefined) this.list.scrollToIndex(index);
    else this.list.render();
  }

  foldSideBranches() {
    this.folded = foldOffPath(this.tree, this.path);
    this.renderList();
    this.revealLeaf();
  }

  toggleFold(id) {
    if (!this.folded.delete(id)) this.folded.add(id);
    this.renderList();
  }

  renderRow(display) {
    const { node, depth, fork, last, folded, hidden } = display;
    const row = node.row;
    const labels = this.model.get("labels") || {};
    const classes = ["pi-node", `pi-node-${row[KIND]}`];
    if (node.id === this.leafId) classes.push("pi-node-leaf");
    else if (this.path.has(node.id)) classes.push("pi-node-path");
    if (node.id === this.selectedId) classes.push("pi-node-selected");
    if (row[FLAG]) classes.push(`pi-node-${row[FLAG]}`);
    const toggle = node.children.length > 0 && (display.branching || folded)
      ? h("span", { class: "pi-node-fold", text: folded ? "▸" : "▾", title: folded ? "unfold" : "fold",
          onclick: (event) => { event.stopPropagation(); this.toggleFold(node.id); } })
      : h("span", { class: "pi-node-fold pi-node-nofold", text: fork ? (last ? "└" : "├") : "" });
    const label = labels[node.id];
    const stats = [];
    if (row[MODEL]) stats.push(row[MODEL]);
    if (row[TOKENS]) stats.push(`${formatTokens(row[TOKENS])} tok`);
    if (row[COST]) stats.push(formatCost(row[COST]));
    const el = h(
      "div",
      { class: classes.join(" "), "data-id": node.id, role: "treeitem", title: `${row[KIND]} ${node.id}` },
      toggle,
      h("span", { class: "pi-node-kind", text: KIND_BADGE[row[KIND]] || "•" }),
      h("span", { class: "pi-node-title", text: row[TITLE] || row[KIND] }),
      label ? h("span", { class: "pi-node-label", text: label }) : null,
      EDIT_FLAGS[row[FLAG]] ? h("span", { class: "pi-node-edit", text: row[FLAG], title: EDIT_FLAGS[row[FLAG]] }) : null,
      hidden ? h("span", { class: "pi-node-hidden", text: `+${hidden}` }) : null,
      node.id === this.leafId ? h("span", { class: "pi-node-here", text: "● current" }) : null,
      stats.length ? h("span", { class: "pi-node-stats", text: stats.join(" · ") }) : null,
    );
    el.style.paddingLeft = `${6 + depth * 16}px`;
    el.addEventListener("click", () => this.select(node.id));
    return el;
  }

  select(id) {
    if (!id) return;
    this.selectedId = id;
    this.list.render();
    this.renderDetail();
    this.send({ type: "select", id });
  }

  onKey(event) {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    event.stopPropagation();
    const index = this.indexById.get(this.selectedId);
    const next = index === undefined ? 0 : index + (event.key === "ArrowDown" ? 1 : -1);
    if (next < 0 || next >= this.rows.length) return;
    this.select(this.rows[next].node.id);
    this.list.scrollToIndex(next);
  }

  // The kernel selected a node (a click's answer, or `view.select(...)` from Python).
  onSelected() {
    const synced = this.model.get("selected_id") || null;
    if (synced === this.selectedId) return;
    this.selectedId = synced;
    const index = synced === null ? undefined : this.indexById.get(synced);
    if (index !== undefined) this.list.scrollToIndex(index);
    else this.list.render();
    this.renderDetail();
  }

  renderDetail() {
    const detail = this.model.get("selected_detail") || {};
    this.detailEl.replaceChildren();
    if (!this.selectedId) {
      this.detailEl.append(h("div", { class: "pi-muted", text: "Select a node to see its message and actions." }));
      return;
    }
    const node = this.tree && this.tree.byId.get(this.selectedId);
    const title = node ? node.row[TITLE] : this.selectedId;
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
      const labels = this.model.get("labels") || {};
      const input = h("input", { type: "text", class: "pi-label-input", placeholder: "label", value: labels[id] || "" });
      input.addEventListener("keydown", (event) => event.stopPropagation());
      parts.push(input, h("button", { class: "pi-button pi-label-set", type: "button", text: "Set label", disabled: busy,
        onclick: () => this.send({ type: "label", id, text: input.value.trim() }) }));
    }
    this.actionsEl.replaceChildren(...parts);
  }

  renderNotice() {
    showNotice(this.noticeEl, this.model.get("notice") || "", () => this.send({ type: "dismiss_notice" }));
  }

  dispose() {
    for (const [event, fn] of this.listeners) this.model.off(event, fn);
    this.resizeObserver?.disconnect();
  }
}

function render({ model, el }) {
  const view = new SessionTreeView(model, el);
  return () => view.dispose();
}

export default { render };
