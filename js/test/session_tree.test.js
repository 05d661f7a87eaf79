import { afterEach, describe, expect, it, vi } from "vitest";
import widget, { SessionTreeView } from "../src/session_tree.js";
import { BLOCK, BRANCHING, FOLDED, FORK, LAST, OFFLINE_MS, PATH, RowCache } from "../src/tree_model.js";
import { FakeModel } from "./fake_model.js";

// A display row as the kernel sends it: [id, kind, title, model, tokens, cost, flag, label,
// depth, bits, hidden].
const row = (id, kind = "user", title = id, extra = {}) => [id, kind, title, extra.model || "", extra.tokens || 0, extra.cost || 0, extra.flag || "", extra.label || "", extra.depth || 0, extra.bits ?? LAST, extra.hidden || 0];

// A long linear session: display row i is entry n<i>.
const chainRow = (i) => row(`n${i}`, i % 2 ? "assistant" : "user", `turn ${i}`, { bits: LAST | PATH });

function page(total, segments, extra = {}) {
  return { layout: extra.layout ?? 1, total, entries: extra.entries ?? total, leaf_index: extra.leaf ?? total - 1, show_meta: false, segments };
}

// The synced page of a `total`-row chain: the first 30 rows and the 200 before the leaf.
function chainPage(total, layout = 1) {
  const range = (a, b) => Array.from({ length: b - a }, (_, k) => chainRow(a + k));
  return page(total, [[0, range(0, 30)], [total - 200, range(total - 200, total)]], { layout });
}

function treeState(pageValue, overrides = {}) {
  return {
    page: pageValue,
    leaf_id: "",
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
  vi.useRealTimers();
});

describe("RowCache", () => {
  it("adopts a page, keeps its rows until another layout comes, and drops stale replies", () => {
    const cache = new RowCache();
    cache.adopt(chainPage(20_000));
    expect([cache.total, cache.cachedCount(), cache.leafIndex]).toEqual([20_000, 230, 19_999]);
    expect(cache.get(19_999)[0]).toBe("n19999");
    expect(cache.indexOf("n5")).toBe(5);
    expect(cache.accept({ type: "rows", layout: 0, start: 500, rows: [chainRow(500)] })).toBe(false);
    expect(cache.get(500)).toBeUndefined();
    expect(cache.accept({ type: "rows", layout: 1, start: 500, rows: [chainRow(500)] })).toBe(true);
    expect(cache.get(500)[0]).toBe("n500");
    cache.adopt(chainPage(20_000)); // the same layout again (a leaf sync): rows stay
    expect(cache.get(500)[0]).toBe("n500");
    cache.adopt(chainPage(20_001, 2));
    expect(cache.get(500)).toBeUndefined();
  });

  it("asks for missing rows in aligned blocks, each once", () => {
    const cache = new RowCache();
    cache.adopt(chainPage(20_000));
    expect(cache.requests(0, 25)).toEqual([]); // in the page
    const asked = cache.requests(9_950, 10_060, 0);
    expect(asked).toEqual([
      { type: "rows", layout: 1, start: 9_900, end: 10_000 },
      { type: "rows", layout: 1, start: 10_000, end: 10_100 },
    ]);
    expect(cache.requests(9_950, 10_060, 0)).toEqual([]); // pending
    expect(cache.offline(OFFLINE_MS - 1)).toBe(false);
    expect(cache.offline(OFFLINE_MS)).toBe(true); // never answered: a saved notebook, no kernel
    cache.accept({ type: "rows", layout: 1, start: 9_900, rows: Array.from({ length: BLOCK }, (_, k) => chainRow(9_900 + k)) });
    expect(cache.offline(OFFLINE_MS * 2)).toBe(false);
    expect(cache.requests(19_990, 20_100)).toEqual([]); // clamped to the total, in the page
  });
});

describe("SessionTreeView", () => {
  it("keeps the DOM small for a 20,000-row tree and fetches what scrolls into view", () => {
    const { model, el, view } = mount(treeState(chainPage(20_000), { leaf_id: "n19999" }));
    const shown = el.querySelectorAll(".pi-node").length;
    expect(shown).toBeGreaterThan(5);
    expect(shown).toBeLessThanOrEqual(40);
    expect(el.querySelector(".pi-tree-count").textContent).toBe("20000 entries");
    const leaf = el.querySelector(".pi-node-leaf");
    expect(leaf.getAttribute("data-id")).toBe("n19999");
    expect(leaf.textContent).toContain("● current");
    expect(model.sent).toEqual([]); // the leaf's rows are in the page
    expect(el.querySelector(".pi-tree-spacer").style.height).toBe(`${20_000 * 24}px`);

    view.scroller.scrollTop = 10_000 * 24;
    view.list.render();
    expect(el.querySelectorAll(".pi-node-pending").length).toBeGreaterThan(5);
    expect(el.querySelector(".pi-node-pending").textContent).toBe("loading…");
    expect(model.sent).toEqual([
      { type: "rows", layout: 1, start: 9_900, end: 10_000 },
      { type: "rows", layout: 1, start: 10_000, end: 10_100 },
    ]);
    for (const start of [9_900, 10_000]) {
      model.custom({ type: "rows", layout: 1, start, rows: Array.from({ length: BLOCK }, (_, k) => chainRow(start + k)) });
    }
    expect(el.querySelectorAll(".pi-node-pending").length).toBe(0);
    expect(el.querySelector('[data-id="n10000"]')).not.toBeNull();
  });

  it("says the rest needs the kernel when a saved page is scrolled past with no kernel", () => {
    vi.useFakeTimers();
    const { model, el, view } = mount(treeState(chainPage(20_000)));
    view.scroller.scrollTop = 5_000 * 24;
    view.list.render();
    expect(model.sent.length).toBeGreaterThan(0);
    expect(el.querySelector(".pi-tree-offline").hidden).toBe(true);
    vi.advanceTimersByTime(OFFLINE_MS + 10);
    const offline = el.querySelector(".pi-tree-offline");
    expect(offline.hidden).toBe(false);
    expect(offline.textContent).toContain("230 of its 20,000 rows");
    expect(offline.textContent).toContain("needs the running kernel");
    expect(el.querySelector(".pi-node-pending").textContent).toContain("needs the kernel");
    view.scroller.scrollTop = 0; // the saved page still shows
    view.list.render();
    expect(el.querySelector('[data-id="n0"]')).not.toBeNull();
  });

  it("scrolls to the current node once the page lays the tree out, and after a new leaf", () => {
    // jsdom has no layout: a ResizeObserver stand-in and a settable height play the page.
    const observers = [];
    globalThis.ResizeObserver = class {
      constructor(callback) { this.callback = callback; observers.push(this); }
      observe() {}
      disconnect() { this.disconnected = true; }
    };
    try {
      const { model, view } = mount(treeState(chainPage(2000), { leaf_id: "n1999" }));
      let height = 0;
      Object.defineProperty(view.scroller, "clientHeight", { get: () => height });
      view.scroller.scrollTop = 0; // built before layout: its scroll was lost
      observers[0].callback();
      expect(view.scroller.scrollTop).toBe(0); // still no height: nothing to do yet
      height = 240;
      observers[0].callback();
      expect(view.scroller.scrollTop).toBeGreaterThan((1999 - 10) * 24);
      expect(view.scroller.scrollTop).toBeLessThanOrEqual(1999 * 24);
      expect(observers[0].disconnected).toBe(true);
      // a new branch: the leaf moves, and the page of the new layout comes with it
      view.scroller.scrollTop = 0;
      const next = chainPage(2001, 2);
      next.leaf_index = 1500;
      model.update({ leaf_id: "x1", page: next });
      expect(view.scroller.scrollTop).toBeGreaterThan((1500 - 10) * 24);
    } finally {
      delete globalThis.ResizeObserver;
    }
  });

  it("selects a node, shows its detail when it arrives, and sends the actions", () => {
    const rows = [row("a", "user", "hi", { bits: PATH | LAST }), row("b", "assistant", "hello", { model: "faux/m", tokens: 1500, cost: 0.002, label: "v1", bits: PATH | LAST })];
    const { model, el } = mount(treeState(page(2, [[0, rows]])));
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
    expect(detail.querySelector(".pi-label-input").value).toBe("v1");
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
    expect(el.querySelector('[data-id="b"] .pi-node-label').textContent).toBe("v1");
    expect(el.querySelector('[data-id="a"]').classList.contains("pi-node-path")).toBe(true);
  });

  it("draws branch points, folded subtrees with their size, and sends fold requests", () => {
    const rows = [
      row("a", "user", "a", { bits: LAST | BRANCHING | PATH }),
      row("b", "assistant", "b", { depth: 1, bits: FORK | PATH }),
      row("c", "assistant", "c", { depth: 1, bits: FORK | LAST | FOLDED, hidden: 1234 }),
    ];
    const { model, el } = mount(treeState(page(3, [[0, rows]], { leaf: 1 })));
    expect(el.querySelector('[data-id="a"] .pi-node-fold').textContent).toBe("▾");
    expect(el.querySelector('[data-id="b"] .pi-node-fold').textContent).toBe("├");
    const folded = el.querySelector('[data-id="c"]');
    expect(folded.querySelector(".pi-node-fold").textContent).toBe("▸");
    expect(folded.querySelector(".pi-node-hidden").textContent).toBe("+1,234");
    expect(folded.style.paddingLeft).toBe("22px");
    folded.querySelector(".pi-node-fold").click();
    el.querySelector('[data-id="a"] .pi-node-fold').click();
    el.querySelectorAll(".pi-tree-toolbar button")[1].click(); // fold side branches
    const toggle = el.querySelector(".pi-tree-meta-toggle");
    toggle.checked = true;
    toggle.dispatchEvent(new Event("change"));
    expect(model.sent).toEqual([
      { type: "fold", id: "c", folded: false },
      { type: "fold", id: "a", folded: true },
      { type: "fold_side" },
      { type: "show_meta", show: true },
    ]);
    expect(el.querySelector(".pi-node-leaf").getAttribute("data-id")).toBe("b");
  });

  it("searches in the kernel, lists the matches and reveals the one clicked", () => {
    const { model, el, view } = mount(treeState(chainPage(20_000)));
    const input = el.querySelector(".pi-tree-search");
    input.value = " turn 7777 ";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(model.sent).toEqual([{ type: "search", query: "turn 7777" }]);
    expect(el.querySelector(".pi-tree-results").textContent).toContain("searching");
    model.custom({ type: "found", query: "older", matches: [], total: 0 }); // not this search's
    expect(el.querySelector(".pi-tree-results").textContent).toContain("searching");
    model.custom({ type: "found", query: "turn 7777", matches: [["n7777", "assistant", "turn 7777", "here"]], total: 1 });
    const result = el.querySelector(".pi-tree-result");
    expect(result.textContent).toContain("turn 7777");
    expect(el.querySelector(".pi-tree-results-head").textContent).toContain("1 match for “turn 7777”");
    result.click();
    expect(model.sent.at(-1)).toEqual({ type: "reveal", id: "n7777" });
    // the kernel unfolds what hid it (a new layout), sends its rows, then where it is
    model.update({ page: chainPage(20_000, 2), selected_id: "n7777" });
    model.custom({ type: "rows", layout: 2, start: 7_700, rows: Array.from({ length: 100 }, (_, k) => chainRow(7_700 + k)) });
    model.custom({ type: "revealed", layout: 2, id: "n7777", index: 7777 });
    expect(view.scroller.scrollTop).toBeGreaterThan(7_700 * 24);
    const shown = el.querySelector('.pi-node[data-id="n7777"]');
    expect(shown.classList.contains("pi-node-selected")).toBe(true);
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    expect(el.querySelector(".pi-tree-results").hidden).toBe(true);
  });

  it("shows pi 1.6 kinds: system patches and context edits on their targets", () => {
    const rows = [
      row("s", "system", "system: Base. · tools +read"),
      row("u", "user", "question", { flag: "edited" }),
      row("a", "assistant", "answer", { flag: "omitted" }),
      row("e", "context_edit", "edit → a: hidden from context"),
      row("w", "usage", "usage: cache_warm", { tokens: 400 }),
    ];
    const { el } = mount(treeState(page(5, [[0, rows]])));
    expect(el.querySelector('[data-id="s"] .pi-node-kind').textContent).toBe("S");
    expect(el.querySelector('[data-id="e"] .pi-node-kind').textContent).toBe("E");
    expect(el.querySelector('[data-id="w"] .pi-node-kind').textContent).toBe("$");
    const hidden = el.querySelector('[data-id="a"]');
    expect(hidden.classList.contains("pi-node-omitted")).toBe(true);
    expect(hidden.querySelector(".pi-node-edit").getAttribute("title")).toBe("hidden from the context");
    expect(el.querySelector('[data-id="u"] .pi-node-edit').textContent).toBe("edited");
    expect(el.querySelector('[data-id="s"] .pi-node-edit')).toBeNull();
  });

  it("follows a selection made in the kernel", () => {
    const rows = [row("a"), row("b"), row("c")];
    const { model, el } = mount(treeState(page(3, [[0, rows]]), { selected_id: "a" }));
    expect(el.querySelector(".pi-node-selected").getAttribute("data-id")).toBe("a");
    model.update({ selected_id: "c", selected_detail: { id: "c", type: "message", items: [], text: "raw entry" } });
    expect(el.querySelector(".pi-node-selected").getAttribute("data-id")).toBe("c");
    expect(el.querySelector(".pi-tree-detail pre").textContent).toBe("raw entry");
    expect(model.sent).toEqual([]);
  });

  it("moves the selection with the arrow keys", () => {
    const rows = [row("a"), row("b"), row("c")];
    const { model, el, view } = mount(treeState(page(3, [[0, rows]])));
    view.scroller.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown" }));
    view.scroller.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown" }));
    view.scroller.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp" }));
    expect(model.sent.map((m) => m.id)).toEqual(["a", "b", "a"]);
    expect(el.querySelector(".pi-node-selected").getAttribute("data-id")).toBe("a");
  });

  it("hides actions that have no handler and shows busy state and notices", () => {
    const { model, el } = mount(treeState(page(1, [[0, [row("a")]]]), { controls: { navigate: false, fork: false, label: false, compact: false } }));
    el.querySelector('[data-id="a"]').click();
    expect(el.querySelector(".pi-detail-actions").children.length).toBe(0);
    expect(el.querySelector(".pi-compact").hidden).toBe(true);
    model.update({ busy: "navigating…", notice: "Navigate failed: busy" });
    expect(el.querySelector(".pi-tree-busy").textContent).toBe("navigating…");
    el.querySelector(".pi-dismiss").click();
    expect(model.sent.at(-1)).toEqual({ type: "dismiss_notice" });
  });

  it("unsubscribes on cleanup", () => {
    const model = new FakeModel(treeState(page(1, [[0, [row("a")]]])));
    const cleanup = widget.render({ model, el: document.createElement("div") });
    cleanup();
    expect(model.listenerCount()).toBe(0);
  });
});
