// The widget contract from the kernel's side: tests/fixtures/widget_contract.json holds states
// the Python widgets produced in real runs (tests/notebook/test_widget_contract.py checks they
// still have that shape). Here the front ends render them: every trait a view reads must be in
// the state the kernel sends, and the state must show what it carries.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { RunView } from "../src/run_view.js";
import restoreWidget from "../src/restore_card.js";
import { SessionTreeView } from "../src/session_tree.js";
import { FakeModel } from "./fake_model.js";

// vitest runs in jsdom, where import.meta.url is not a file: URL; the test file's path is.
const HERE = dirname(fileURLToPath(import.meta.url.replace(/^[a-z]+:\/\/[^/]*/, "file://")));
const fixture = JSON.parse(
  readFileSync(join(HERE, "..", "..", "tests", "fixtures", "widget_contract.json"), "utf-8"),
);

// A model that records every trait the view asks for.
class RecordingModel extends FakeModel {
  constructor(state) {
    super(state);
    this.read = new Set();
  }

  get(name) {
    this.read.add(name);
    return super.get(name);
  }
}

const views = [];
afterEach(() => {
  while (views.length) views.pop().dispose();
});

function mountRun(state) {
  const model = new RecordingModel(state);
  const el = document.createElement("div");
  views.push(new RunView(model, el, { setInterval: () => 0, clearInterval: () => {} }));
  return { model, el };
}

function mountTree(state) {
  const model = new RecordingModel(state);
  const el = document.createElement("div");
  views.push(new SessionTreeView(model, el));
  return { model, el };
}

describe("run view ← kernel state", () => {
  for (const [name, state] of Object.entries(fixture.run_view)) {
    it(`reads only traits the kernel sends (${name})`, () => {
      const { model } = mountRun(state);
      const missing = [...model.read].filter((trait) => !(trait in state));
      expect(missing).toEqual([]);
    });
  }

  it("renders a finished run: prompt, thinking, text, the tool card and the answer", () => {
    const { el } = mountRun(fixture.run_view.finished_run);
    expect(el.querySelector(".pi-status").textContent).toBe("done");
    const text = el.querySelector(".pi-transcript").textContent;
    for (const part of ["list files", "Let me look.", "Two files"]) expect(text).toContain(part);
    // the rich result (the tool's HTML) renders in a shadow root, away from the page's styles
    const rich = el.querySelector(".pi-tool .pi-tool-result .pi-rich-html");
    expect(rich.shadowRoot.textContent).toContain("a.txt");
    expect(el.querySelector(".pi-tool").classList.contains("pi-tool-ok")).toBe(true);
  });

  it("renders a tool call waiting for approval with Allow and Deny", () => {
    const { model, el } = mountRun(fixture.run_view.awaiting_approval);
    expect(el.querySelector(".pi-status").textContent).toBe("waiting for approval");
    const [callId] = Object.keys(fixture.run_view.awaiting_approval.running_tools);
    el.querySelector(".pi-allow").click();
    expect(model.sent).toEqual([{ type: "approval", tool_call_id: callId, allow: true }]);
    expect(el.querySelector(".pi-deny")).not.toBeNull();
  });
});

describe("session tree ← kernel state", () => {
  const state = fixture.session_tree.two_branches;

  it("reads only traits the kernel sends", () => {
    const { model } = mountTree(state);
    const missing = [...model.read].filter((trait) => !(trait in state));
    expect(missing).toEqual([]);
  });

  it("shows both branches, the current leaf and the label", () => {
    const { el } = mountTree(state);
    const shown = [...el.querySelectorAll(".pi-node")].map((node) => node.getAttribute("data-id"));
    const rows = state.page.segments.flatMap(([, segment]) => segment);
    const ids = (title) => rows.filter((row) => row[2] === title).map((row) => row[0]);
    for (const title of ["hello", "hi", "another branch"]) expect(shown).toContain(ids(title)[0]);
    expect(el.querySelector(".pi-node-leaf").getAttribute("data-id")).toBe(state.leaf_id);
    expect(el.textContent).toContain("start");
  });
});

describe("restore card ← kernel state", () => {
  it("the tree reads only traits the kernel sends and shows the card a move offers", () => {
    const state = fixture.session_tree.restore_offered;
    const { model, el } = mountTree(state);
    const missing = [...model.read].filter((trait) => !(trait in state));
    expect(missing).toEqual([]);
    const card = el.querySelector(".pi-tree-restore .pi-restore");
    expect(card.getAttribute("data-card-id")).toBe(state.restore.id);
    const changes = [...card.querySelectorAll(".pi-restore-variable")].map((v) => [v.dataset.name, v.dataset.change]);
    expect(changes).toEqual(state.restore.variables.map((v) => [v.name, v.change]));
    expect(card.querySelectorAll(".pi-restore-cell").length).toBe(state.restore.cells.length);
    expect(card.querySelectorAll(".pi-restore-step").length).toBe(state.restore.document.length);
    card.querySelector(".pi-restore-allow").click();
    expect(model.sent.at(-1)).toEqual({ type: "restore", card_id: state.restore.id, allow: true, revert_document: true });
    model.set("restore", { ...state.restore, state: "done", result: "ok" });
    expect(el.querySelector(".pi-tree-restore .pi-restore-allow")).toBeNull();
    model.set("restore", {});
    expect(el.querySelector(".pi-tree-restore").hidden).toBe(true);
  });

  for (const [name, state] of Object.entries(fixture.restore_card)) {
    it(`the %fork widget reads only traits the kernel sends (${name})`, () => {
      const model = new RecordingModel(state);
      const el = document.createElement("div");
      const dispose = restoreWidget.render({ model, el });
      const missing = [...model.read].filter((trait) => !(trait in state));
      expect(missing).toEqual([]);
      expect(el.querySelector(".pi-restore").classList.contains(`pi-restore-${state.card.state}`)).toBe(true);
      dispose();
    });
  }
});
