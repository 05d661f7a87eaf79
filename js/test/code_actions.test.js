import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { RUNNABLE_LANGUAGES } from "../src/code_actions.js";
import { RunView } from "../src/run_view.js";
import { FakeModel } from "./fake_model.js";
import { USAGE, baseState } from "./run_state.js";

const HERE = dirname(fileURLToPath(import.meta.url.replace(/^[a-z]+:\/\/[^/]*/, "file://")));
const REPLY = [
  "Load it like this:",
  "",
  "```python",
  "df = pd.read_csv('sales.csv')",
  "```",
  "",
  "Or without a language:",
  "",
  "```",
  "df.head()",
  "```",
  "",
  "In a shell:",
  "",
  "```bash",
  "ls data/",
  "```",
  "",
  "    indented = 'no buttons'",
].join("\n");

const assistant = (id, text, stop_reason = "stop") => ({ kind: "assistant", id, blocks: [{ type: "text", text }], stop_reason, error_message: null, model: "faux/faux-1", usage: USAGE });

function state(controls, messages = [assistant("m1", REPLY)], extra = {}) {
  const base = baseState();
  return { ...base, status: "done", messages, controls: { ...base.controls, stop_tool: true, ...controls }, ...extra };
}

const views = [];
function mount(st, manager = undefined) {
  const model = new FakeModel(st);
  if (manager) model.widget_manager = manager;
  const el = document.createElement("div");
  views.push(new RunView(model, el, { setInterval: () => 0, clearInterval: () => {} }));
  return { model, el };
}
afterEach(() => {
  while (views.length) views.pop().dispose();
});

const bars = (el) => [...el.querySelectorAll(".pi-code-actions")];
const labels = (bar) => [...bar.querySelectorAll("button")].map((b) => b.textContent);

describe("code actions", () => {
  it("puts both buttons under python and unlabelled fenced blocks only", () => {
    const { el } = mount(state({ insert_code: true, edit_code: "In [3]" }));
    const found = bars(el);
    expect(found.length).toBe(2);
    for (const bar of found) expect(labels(bar)).toEqual(["Insert as cell", "Apply as edit"]);
    expect(found[0].previousElementSibling.textContent).toBe("df = pd.read_csv('sales.csv')");
    expect(found[1].previousElementSibling.textContent).toBe("df.head()");
    expect(found[0].querySelector(".pi-code-edit").title).toContain("In [3]");
  });

  it("sends the reply's id and the block's code; one click each", () => {
    const { el, model } = mount(state({ insert_code: true, edit_code: "In [3]" }));
    const [first, second] = bars(el);
    first.querySelector(".pi-code-insert").click();
    first.querySelector(".pi-code-insert").click();
    second.querySelector(".pi-code-edit").click();
    expect(model.sent).toEqual([
      { type: "code_action", action: "insert", item_id: "m1", source: "df = pd.read_csv('sales.csv')" },
      { type: "code_action", action: "edit", item_id: "m1", source: "df.head()" },
    ]);
    expect(first.querySelector(".pi-code-insert").disabled).toBe(true);
  });

  it("shows nothing the kernel does not offer, and follows the controls", () => {
    const { el, model } = mount(state({ insert_code: false, edit_code: "" }));
    expect(bars(el).length).toBe(0);
    model.set("controls", { ...model.get("controls"), insert_code: true });
    expect(bars(el).map(labels)).toEqual([["Insert as cell"], ["Insert as cell"]]);
    model.set("controls", { ...model.get("controls"), edit_code: "cell 3f2a" });
    expect(bars(el).map(labels)).toEqual([["Insert as cell", "Apply as edit"], ["Insert as cell", "Apply as edit"]]);
    model.set("controls", { ...model.get("controls"), insert_code: false, edit_code: "" });
    expect(bars(el).length).toBe(0);
  });

  it("a saved state without a kernel's offer (nbconvert, an old output) has no buttons", () => {
    const { el } = mount(state({}));
    expect(el.querySelector(".pi-code-actions")).toBeNull();
    expect(el.querySelectorAll("pre.pi-code").length).toBe(4);
  });

  it("shows none where no kernel is behind the page (saved state embedded in nbconvert's HTML)", () => {
    const offered = state({ insert_code: true, edit_code: "In [3]" });
    expect(mount(offered, {}).el.querySelector(".pi-code-actions")).toBeNull(); // html-manager
    expect(bars(mount(offered, { kernel: {} }).el).length).toBe(2); // JupyterLab, Notebook 7
  });

  it("waits for the reply to finish streaming", () => {
    const { el, model } = mount(state({ insert_code: true }, [], { status: "streaming", current: assistant("m1", REPLY, null) }));
    expect(el.querySelector(".pi-code-actions")).toBeNull();
    model.update({ current: {}, messages: [assistant("m1", REPLY)], status: "done" });
    expect(bars(el).length).toBe(2);
  });

  it("shows the edit card of a change the user asked for, then its result in place", () => {
    const preview = { title: "Edit code cell In [3] (abc: 'df = x')", language: "python", source: "df = y", diff: "--- cell (now)\n+++ cell (proposed)\n@@ -1 +1 @@\n-df = x\n+df = y", always: false };
    const approval = { state: "pending", timeout: 300, reason: "", preview, review: false };
    const running = { "pi-user-edit-1": { tool_call_id: "pi-user-edit-1", tool_name: "edit_cell", args: "{}", started_at: 0, progress: "", progress_bundle: null, progress_images: [], approval } };
    const { el, model } = mount(state({ insert_code: true, edit_code: "In [3]" }));
    model.set("running_tools", running);
    const card = el.querySelector('.pi-transcript > .pi-tool[data-tool-call-id="pi-user-edit-1"]');
    expect(card).not.toBeNull();
    expect(card.querySelector(".pi-approval-question").textContent).toContain("Edit code cell In [3]");
    expect(card.querySelector(".pi-diff-add").textContent).toBe("+df = y\n");
    card.querySelector(".pi-allow").click();
    expect(model.sent.at(-1)).toEqual({ type: "approval", tool_call_id: "pi-user-edit-1", allow: true });
    const result = { kind: "tool_result", id: "m2", tool_call_id: "pi-user-edit-1", tool_name: "edit_cell", is_error: false, text: "Edited cell abc.", text_length: 16, images: [], mime_bundle: null, duration_ms: 5, approval: { ...approval, state: "allowed" } };
    model.update({ running_tools: {}, messages: [...model.get("messages"), result] });
    expect(el.querySelectorAll('[data-tool-call-id="pi-user-edit-1"]').length).toBe(1);
    expect(card.querySelector(".pi-tool-result").textContent).toBe("Edited cell abc.");
  });

  it("knows the same runnable languages as the kernel", () => {
    const python = readFileSync(join(HERE, "..", "..", "pi_notebook", "notebook", "workspace", "code_actions.py"), "utf-8");
    const listed = /RUNNABLE_LANGUAGES = frozenset\(\{([^}]*)\}\)/.exec(python)[1];
    const names = [...listed.matchAll(/"([^"]*)"/g)].map((m) => m[1]).sort();
    expect(names).toEqual([...RUNNABLE_LANGUAGES].sort());
  });
});
