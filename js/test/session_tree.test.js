import { afterEach, describe, expect, it } from "vitest";
import widget, { SessionTreeView } from "../src/session_tree.js";
import { activePath, buildTree, flatten, foldOffPath, reveal } from "../src/tree_model.js";
import { FakeModel } from "./fake_model.js";

// [id, parent, kind, title, model, tokens, cost, flag]; written with parent ids, then turned
// into the wire's table (parents as row indexes) by `table`.
const row = (id, parent, kind = "user", title = id, extra = {}) => [id, parent, kind, title, extra.model || "", extra.tokens || 0, extra.cost || 0, extra.flag || ""];

function table(rows) {
  const index = new Map(rows.map((r, i) => [r[0], i]));
  return rows.map((r) => [r[0], r[1] === null ? null : (index.get(r[1]) ?? null), ...r.slice(2)]);
}

// Deterministic generated session: mostly a chain of turns, with a branch every so often.
function generate(count, seed = 7) {
  let state = seed;
  const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const kinds = ["user", "assistant", "tool_result", "assistant"];
  const rows = [];
  let tip = null;
  for (let i = 0; i < count; i++) {
    let parent = tip;
    if (i > 10 && random() < 0.03) parent = rows[Math.floor(random() * rows.length)][0];
    const id = `n${i}`;
    rows.push(row(id, parent, kinds[i % 4], `turn ${i} ${"words ".repeat(i % 7)}`, { model: i % 4 === 1 ? "faux/m" : "", tokens: i % 4 === 1 ? 100 + i : 0, cost: i % 4 === 1 ? 0.001 : 0 }));
    tip = id;
  }
  return rows;
}

describe("tree model", () => {
  const rows = table([
    row("a", null, "model_change", "model: faux/m"),
    row("b", "a", "user", "hi"),
    row("c", "b", "assistant", "hello"),
    row("l", "c", "label", "label"),
    row("d", "l", "user", "go on"),
    row("e", "d", "assistant", "sure"),
    row("f", "c", "branch_summary", "summary"),
    row("g", "f", "user", "other way"),
  ]);

  it("hides bookkeeping entries and hangs their children from the nearest shown ancestor", () => {
    const tree = buildTree(rows);
    expect(tree.count).toBe(7);
    expect(tree.byId.get("c").children.map((n) => n.id)).toEqual(["d", "f"]);
    const all = buildTree(rows, { showMeta: true });
    expect(all.byId.get("c").children.map((n) => n.id)).toEqual(["l", "f"]);
    expect(tree.byId.get("c").size).toBe(5);
  });

  it("indents only at branch points, so long chains stay left", () => {
    const flat = flatten(buildTree(rows));
    expect(flat.map((r) => [r.node.id, r.depth])).toEqual([["a", 0], ["b", 0], ["c", 0], ["d", 1], ["e", 1], ["f", 1], ["g", 1]]);
    expect(flat.find((r) => r.node.id === "c").branching).toBe(true);
    expect(flat.find((r) => r.node.id === "f").last).toBe(true);
  });

  it("finds the active path, standing in for a hidden leaf", () => {
    const tree = buildTree(rows);
    expect(activePath(tree, "e")).toEqual({ path: new Set(["e", "d", "l", "c", "b", "a"]), leafId: "e" });
    expect(activePath(tree, "l").leafId).toBe("c");
    expect(activePath(tree, null).leafId).toBeNull();
  });

  it("folds subtrees, counts what is hidden, and reveals a node on demand", () => {
    const tree = buildTree(rows);
    const folded = new Set(["c"]);
    const flat = flatten(tree, folded);
    expect(flat.map((r) => r.node.id)).toEqual(["a", "b", "c"]);
    expect(flat[2].hidden).toBe(4);
    expect(reveal(tree, "g", folded)).toBe(true);
    expect(folded.size).toBe(0);
    const off = foldOffPath(tree, activePath(tree, "e").path);
    expect([...off]).toEqual(["f"]);
  });

  it("survives cycles and unknown parents", () => {
    const tree = buildTree(table([row("x", "y"), row("y", "x"), row("z", "missing")]));
    expect(flatten(tree).length).toBeLessThanOrEqual(3);
    expect(tree.roots.map((n) => n.id)).toContain("z");
  });

  it("handles 2,000 nodes in linear work, without recursion", () => {
    const big = table(generate(2000));
    const tree = buildTree(big);
    const flat = flatten(tree);
    expect(flat.length).toBe(2000);
    expect(tree.roots.length).toBe(1);
    expect(Math.max(...flat.map((r) => r.depth))).toBeGreaterThan(2); // it does branch
    expect(new Set(flat.map((r) => r.node.id)).size).toBe(2000);
    const chain = buildTree(Array.from({ length: 50_000 }, (_, i) => row(`c${i}`, i ? i - 1 : null)));
    expect(flatten(chain).every((r) => r.depth === 0)).toBe(true);
  });
});

function treeState(rows, overrides = {}) {
  return {
    nodes: table(rows),
    tail: [],
    labels: {},
    leaf_id: rows.length ? rows[rows.length - 1][0] : "",
    session_name: "Demo",
    selected_id: "",
    selected_detail: {},
    controls: { navigate: true, fork: true, label: true, compact: true },
    busy: "",
    notice: "",
    ...overrides,
  };
}

const views = [];
function mount(state) {
  const model = new FakeModel(state);
  const el = document.createElement("div");
  const view = new SessionTreeView(model, el);
  views.push(view);
  return { model, el, view };
}

afterEach(() => {
  while (views.length) views.pop().dispose();
});

describe("SessionTreeView", () => {
  it("keeps the DOM small for a 2,000-node session and follows the scroll", () => {
    const rows = generate(2000);
    const { el, view } = mount(treeState(rows));
    const shown = el.querySelectorAll(".pi-node").length;
    expect(shown).toBeGreaterThan(5);
    expect(shown).toBeLessThanOrEqual(40);
    expect(el.querySelectorAll("*").length).toBeLessThan(600);
    expect(el.querySelector(".pi-tree-count").textContent).toBe("2000 entries");
    expect(view.tree.roots.length).toBe(1);
    // The leaf (last row) is revealed and marked on first render.
    const leaf = el.querySelector(".pi-node-leaf");
    expect(leaf.getAttribute("data-id")).toBe("n1999");
    expect(leaf.textContent).toContain("● current");
    view.scroller.scrollTop = 0;
    view.list.render();
    expect(el.querySelector(".pi-node").getAttribute("data-id")).toBe("n0");
    expect(el.querySelectorAll(".pi-node").length).toBeLessThanOrEqual(40);
    const spacer = el.querySelector(".pi-tree-spacer");
    expect(spacer.style.height).toBe(`${2000 * 24}px`);
  });

  it("scrolls to the current node once the page lays the tree out, and after a new branch", () => {
    // jsdom has no layout: a ResizeObserver stand-in and a settable height play the page.
    const observers = [];
    globalThis.ResizeObserver = class {
      constructor(callback) { this.callback = callback; observers.push(this); }
      observe() {}
      disconnect() { this.disconnected = true; }
    };
    try {
      const rows = generate(2000);
      const { model, view } = mount(treeState(rows));
      let height = 0;
      Object.defineProperty(view.scroller, "clientHeight", { get: () => height });
      view.scroller.scrollTop = 0; // built before layout: its scroll was lost
      observers[0].callback();
      expect(view.scroller.scrollTop).toBe(0); // still no height: nothing to do yet
      height = 240;
      observers[0].callback();
      const leafRow = view.indexById.get("n1999");
      expect(leafRow).toBeGreaterThan(100);
      expect(view.scroller.scrollTop).toBeGreaterThan((leafRow - 10) * 24);
      expect(view.scroller.scrollTop).toBeLessThanOrEqual(leafRow * 24);
      expect(observers[0].disconnected).toBe(true);
      // a new branch: the leaf moves to a node that arrives with the next sync
      view.scroller.scrollTop = 0;
      const branch = [...rows, row("x1", "n3", "user", "a new branch")];
      model.update({ leaf_id: "x1" });
      model.update({ nodes: table(branch) });
      const index = view.indexById.get("x1");
      expect(view.scroller.scrollTop).toBeGreaterThan((index - 10) * 24);
    } finally {
      delete globalThis.ResizeObserver;
    }
  });

  it("selects a node, shows its detail when it arrives, and sends the actions", () => {
    const rows = [row("a", null, "user", "hi"), row("b", "a", "assistant", "hello", { model: "faux/m", tokens: 1500, cost: 0.002 })];
    const { model, el } = mount(treeState(rows));
    el.querySelector('[data-id="b"]').click();
    expect(model.sent).toEqual([{ type: "select", id: "b" }]);
    expect(el.querySelector(".pi-tree-detail").textContent).toContain("loading…");
    model.update({
      selected_id: "b",
      selected_detail: {
        id: "b", type: "message", timestamp: "2026-01-01T00:00:00.000Z", title: "hello", model: "faux/m", tokens: 1500, cost: 0.002, text: "",
        items: [{ kind: "assistant", id: "b", blocks: [{ type: "text", text: "hello **world**" }], stop_reason: "stop", error_message: null, model: "faux/m", usage: null }],
      },
    });
    const detail = el.querySelector(".pi-tree-detail");
    expect(detail.querySelector("strong").textContent).toBe("world");
    expect(detail.querySelector(".pi-detail-meta").textContent).toContain("1,500 tokens");
    detail.querySelector(".pi-summarize").checked = true;
    detail.querySelector(".pi-navigate").click();
    detail.querySelector(".pi-fork").click();
    detail.querySelector(".pi-label-input").value = " checkpoint ";
    detail.querySelector(".pi-label-set").click();
    el.querySelector(".pi-compact").click();
    expect(model.sent.slice(1)).toEqual([
      { type: "navigate", id: "b", summarize: true },
      { type: "fork", id: "b" },
      { type: "label", id: "b", text: "checkpoint" },
      { type: "compact" },
    ]);
  });

  it("grows live from the tail, moves the leaf and shows labels", () => {
    const rows = [row("a", null, "user", "hi"), row("b", "a", "assistant", "hello")];
    const { model, el } = mount(treeState(rows));
    const tail = table([...rows, row("c", "b", "user", "more"), row("d", "c", "assistant", "ok")]).slice(rows.length);
    model.update({ tail, leaf_id: "d", labels: { b: "v1" } });
    expect(el.querySelectorAll(".pi-node").length).toBe(4);
    expect(el.querySelector(".pi-node-leaf").getAttribute("data-id")).toBe("d");
    expect(el.querySelector('[data-id="b"] .pi-node-label').textContent).toBe("v1");
    expect(el.querySelector('[data-id="a"]').classList.contains("pi-node-path")).toBe(true);
  });

  it("folds and unfolds branches, and can show bookkeeping entries", () => {
    const rows = [row("a", null), row("b", "a"), row("c", "a"), row("d", "c"), row("i", "d", "session_info", "name: x")];
    const { el } = mount(treeState(rows, { leaf_id: "b" }));
    expect(el.querySelectorAll(".pi-node").length).toBe(4);
    el.querySelector('[data-id="a"] .pi-node-fold').click();
    expect(el.querySelectorAll(".pi-node").length).toBe(1);
    expect(el.querySelector('[data-id="a"] .pi-node-hidden').textContent).toBe("+3");
    el.querySelector('[data-id="a"] .pi-node-fold').click();
    const toggle = el.querySelector(".pi-tree-meta-toggle");
    toggle.checked = true;
    toggle.dispatchEvent(new Event("change"));
    expect(el.querySelectorAll(".pi-node").length).toBe(5);
    el.querySelector(".pi-tree-toolbar button").click(); // go to current
    expect(el.querySelector(".pi-node-leaf").getAttribute("data-id")).toBe("b");
  });

  it("shows pi 1.6 kinds: system patches, context edits on their targets, usage hidden", () => {
    const rows = [
      row("s", null, "system", "system: Base. · tools +read"),
      row("u", "s", "user", "question", { flag: "edited" }),
      row("a", "u", "assistant", "answer", { flag: "omitted" }),
      row("w", "a", "usage", "usage: cache_warm", { tokens: 400 }),
      row("e", "w", "context_edit", "edit → a: hidden from context"),
    ];
    const { el } = mount(treeState(rows));
    expect([...el.querySelectorAll(".pi-node")].map((n) => n.getAttribute("data-id"))).toEqual(["s", "u", "a", "e"]);
    expect(el.querySelector('[data-id="s"] .pi-node-kind').textContent).toBe("S");
    expect(el.querySelector('[data-id="e"] .pi-node-kind').textContent).toBe("E");
    const hidden = el.querySelector('[data-id="a"]');
    expect(hidden.classList.contains("pi-node-omitted")).toBe(true);
    expect(hidden.querySelector(".pi-node-edit").getAttribute("title")).toBe("hidden from the context");
    expect(el.querySelector('[data-id="u"] .pi-node-edit').textContent).toBe("edited");
    expect(el.querySelector('[data-id="s"] .pi-node-edit')).toBeNull();
    const toggle = el.querySelector(".pi-tree-meta-toggle");
    toggle.checked = true;
    toggle.dispatchEvent(new Event("change"));
    expect(el.querySelector('[data-id="w"] .pi-node-kind').textContent).toBe("$");
  });

  it("follows a selection made in the kernel", () => {
    const rows = [row("a", null), row("b", "a"), row("c", "b")];
    const { model, el } = mount(treeState(rows, { selected_id: "a" }));
    expect(el.querySelector(".pi-node-selected").getAttribute("data-id")).toBe("a");
    model.update({ selected_id: "c", selected_detail: { id: "c", type: "message", items: [], text: "raw entry" } });
    expect(el.querySelector(".pi-node-selected").getAttribute("data-id")).toBe("c");
    expect(el.querySelector(".pi-tree-detail pre").textContent).toBe("raw entry");
    expect(model.sent).toEqual([]);
  });

  it("moves the selection with the arrow keys", () => {
    const rows = [row("a", null), row("b", "a"), row("c", "b")];
    const { model, el, view } = mount(treeState(rows));
    view.scroller.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown" }));
    view.scroller.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown" }));
    view.scroller.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp" }));
    expect(model.sent.map((m) => m.id)).toEqual(["a", "b", "a"]);
    expect(el.querySelector(".pi-node-selected").getAttribute("data-id")).toBe("a");
  });

  it("hides actions that have no handler and shows busy state and notices", () => {
    const rows = [row("a", null)];
    const { model, el } = mount(treeState(rows, { controls: { navigate: false, fork: false, label: false, compact: false } }));
    el.querySelector('[data-id="a"]').click();
    expect(el.querySelector(".pi-detail-actions").children.length).toBe(0);
    expect(el.querySelector(".pi-compact").hidden).toBe(true);
    model.update({ busy: "navigating…", notice: "Navigate failed: busy" });
    expect(el.querySelector(".pi-tree-busy").textContent).toBe("navigating…");
    el.querySelector(".pi-dismiss").click();
    expect(model.sent.at(-1)).toEqual({ type: "dismiss_notice" });
  });

  it("unsubscribes on cleanup", () => {
    const model = new FakeModel(treeState([row("a", null)]));
    const cleanup = widget.render({ model, el: document.createElement("div") });
    cleanup();
    expect(model.listenerCount()).toBe(0);
  });
});
