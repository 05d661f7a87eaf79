import { afterEach, describe, expect, it } from "vitest";
import widget, { RunView, applyPatch } from "../src/run_view.js";
import { FakeModel } from "./fake_model.js";
import { USAGE, baseState } from "./run_state.js";

const views = [];
function mount(state) {
  const model = new FakeModel(state);
  const el = document.createElement("div");
  const view = new RunView(model, el, { setInterval: () => 0, clearInterval: () => {} });
  views.push(view);
  return { model, el, view };
}

afterEach(() => {
  while (views.length) views.pop().dispose();
});

const user = (id, text, origin = "prompt") => ({ kind: "user", id, text, images: [], origin });
const assistant = (id, blocks, stop_reason = "stop", extra = {}) => ({ kind: "assistant", id, blocks, stop_reason, error_message: null, model: "faux/faux-1", usage: USAGE, ...extra });
const toolResult = (id, callId, text, extra = {}) => ({ kind: "tool_result", id, tool_call_id: callId, tool_name: "ls", is_error: false, text, text_length: text.length, images: [], mime_bundle: null, duration_ms: 12, approval: null, ...extra });

describe("RunView", () => {
  it("renders a whole saved run from state alone (page reload, executed notebook)", () => {
    const { el } = mount(baseState({
      status: "done",
      messages: [
        user("m0", "list files"),
        assistant("m1", [{ type: "toolCall", id: "t1", name: "ls", args: "{}", complete: true }], "toolUse"),
        toolResult("m2", "t1", "a.txt\nb.txt"),
        assistant("m3", [{ type: "text", text: "Two files: **a.txt** and b.txt." }]),
      ],
    }));
    expect(el.querySelector(".pi-status").textContent).toBe("done");
    expect(el.querySelectorAll(".pi-transcript > .pi-msg").length).toBe(3);
    expect(el.querySelector(".pi-tool .pi-tool-result").textContent).toBe("a.txt\nb.txt");
    expect(el.querySelector(".pi-transcript strong").textContent).toBe("a.txt");
    expect(el.querySelector(".pi-model").textContent).toBe("faux/faux-1");
    expect(el.querySelector(".pi-usage").textContent).toBe("↑1,200 ↓340 · $0.012");
    expect(el.querySelector(".pi-context-fill").style.width).toBe("15.4%");
    expect(el.querySelector(".pi-send").textContent).toBe("Follow up");
    expect(el.querySelector(".pi-stop-button").disabled).toBe(true);
  });

  it("streams the in-progress message incrementally and keeps finished items in place", () => {
    const { model, el } = mount(baseState({ status: "streaming", messages: [user("m0", "write a lot")] }));
    const promptEl = el.querySelector(".pi-transcript > .pi-msg");
    const words = Array.from({ length: 10_000 }, (_, i) => `tok${i}${i % 50 === 49 ? "\n\n" : " "}`);
    let liveEl = null;
    for (let end = 100; end <= words.length; end += 100) {
      model.set("current", assistant("m1", [{ type: "text", text: words.slice(0, end).join("") }], null));
      const now = el.querySelector(".pi-live > .pi-msg");
      if (liveEl === null) liveEl = now;
      expect(now).toBe(liveEl); // the live message is updated, not rebuilt
    }
    expect(el.querySelector(".pi-live").textContent).toContain("tok9999");
    model.update({ messages: [user("m0", "write a lot"), assistant("m1", [{ type: "text", text: words.join("") }])], current: {}, status: "done" });
    expect(el.querySelector(".pi-live").children.length).toBe(0);
    expect(el.querySelector(".pi-transcript > .pi-msg")).toBe(promptEl); // earlier items untouched
    const text = el.querySelector(".pi-transcript").textContent;
    for (const i of [0, 1234, 5000, 9999]) expect(text).toContain(`tok${i}`);
  }, 30_000); // jsdom's sanitiser is slow; a browser does this in a blink

  it("applies patches: appended text, new blocks, pushed items and a promoted reply", () => {
    let state = { patch_seq: 0, messages: [user("m0", "go")], current: {} };
    const step = (patch) => {
      const changes = applyPatch(state, patch);
      state = { ...state, ...changes };
      return changes;
    };
    step({ seq: 1, ops: [["current", assistant("m1", [{ type: "text", text: "Hel" }], null)]], set: { status: "streaming" } });
    const before = state.current;
    step({ seq: 2, ops: [["blocks", "m1", [[0, 3, "lo", null], [1, 0, '{"pa', { type: "toolCall", id: "t1", name: "ls", complete: false }]]]], set: {} });
    expect(state.current.blocks[0].text).toBe("Hello");
    expect(state.current.blocks[1].args).toBe('{"pa');
    expect(before.blocks[0].text).toBe("Hel"); // the old value is not modified
    step({ seq: 3, ops: [["blocks", "m1", [[1, 0, '{\n  "path": "."\n}', { type: "toolCall", id: "t1", name: "ls", complete: true }]]], ["promote", 1, { stop_reason: "toolUse" }]], set: { status: "running_tools" } });
    expect(state.current).toEqual({});
    expect(state.messages.map((m) => m.id)).toEqual(["m0", "m1"]);
    expect(state.messages[1].blocks[1]).toEqual({ type: "toolCall", id: "t1", name: "ls", args: '{\n  "path": "."\n}', complete: true });
    expect(state.messages[1].stop_reason).toBe("toolUse");
    expect(state.status).toBe("running_tools");
    step({ seq: 4, ops: [["push", 2, [user("m2", "more")]]], set: {} });
    expect(state.messages.length).toBe(3);
    expect(state.patch_seq).toBe(4);
    expect(applyPatch(state, { seq: 3, ops: [["push", 0, []]], set: {} })).toEqual({}); // included already
    expect(applyPatch(state, { seq: 6, ops: [], set: {} })).toBeNull(); // a gap
    expect(applyPatch(state, { seq: 5, ops: [["push", 1, [user("x", "x")]]], set: {} })).toBeNull(); // not at the end
    expect(applyPatch(state, { seq: 5, ops: [["blocks", "m9", [[0, 0, "x", null]]]], set: {} })).toBeNull(); // another reply
  });

  it("streams through patches applied once per model: every view grows in place, a gap asks for the state", () => {
    const state = baseState({ status: "streaming", messages: [user("m0", "go")] });
    const model = new FakeModel(state);
    widget.initialize({ model });
    const els = [document.createElement("div"), document.createElement("div")];
    for (const el of els) views.push(new RunView(model, el, { setInterval: () => 0, clearInterval: () => {} }));
    model.custom({ type: "patch", seq: 1, ops: [["current", assistant("m1", [{ type: "text", text: "one " }], null)]], set: {} });
    const liveEls = els.map((el) => el.querySelector(".pi-live > .pi-msg"));
    const seen = [];
    let seq = 1;
    let length = 4;
    for (const more of ["two ", "three ", "four "]) {
      model.custom({ type: "patch", seq: ++seq, ops: [["blocks", "m1", [[0, length, more, null]]]], set: {} });
      length += more.length;
      els.forEach((el, i) => expect(el.querySelector(".pi-live > .pi-msg")).toBe(liveEls[i]));
      seen.push(els.map((el) => el.querySelector(".pi-live .pi-text").textContent.trim()));
    }
    expect(seen).toEqual([["one two", "one two"], ["one two three", "one two three"], ["one two three four", "one two three four"]]);
    model.custom({ type: "patch", seq: ++seq, ops: [["promote", 1, { stop_reason: "stop" }]], set: { status: "done" } });
    for (const el of els) {
      expect(el.querySelector(".pi-live").children.length).toBe(0);
      expect(el.querySelector(".pi-transcript").textContent).toContain("one two three four");
    }
    expect(model.get("messages")[1].blocks[0].text).toBe("one two three four "); // the saved state is whole
    expect(model.sent).toEqual([]);
    model.custom({ type: "patch", seq: seq + 2, ops: [], set: {} });
    model.custom({ type: "patch", seq: seq + 3, ops: [], set: {} });
    expect(model.sent).toEqual([{ type: "resync" }]); // asked once
    expect(model.get("patch_seq")).toBe(seq);
  });

  it("shows running tools with progress and approval, and sends the answer", () => {
    const { model, el } = mount(baseState({ status: "running_tools" }));
    model.update({ messages: [assistant("m1", [{ type: "toolCall", id: "t1", name: "rm", args: '{"path": "x"}', complete: true }], "toolUse")] });
    model.update({
      status: "awaiting_approval",
      running_tools: { t1: { tool_call_id: "t1", tool_name: "rm", args: "", started_at: Date.now(), progress: "", progress_bundle: null, progress_images: [], approval: { state: "pending", timeout: null, reason: "" } } },
    });
    expect(el.querySelector(".pi-status").textContent).toBe("waiting for approval");
    el.querySelector(".pi-allow").click();
    expect(model.sent).toEqual([{ type: "approval", tool_call_id: "t1", allow: true }]);
    model.update({ running_tools: { t1: { tool_call_id: "t1", tool_name: "rm", args: "", started_at: Date.now(), progress: "50%", progress_bundle: null, progress_images: [], approval: { state: "allowed", timeout: null, reason: "" } } }, status: "running_tools" });
    expect(el.querySelector(".pi-tool-progress").textContent).toBe("50%");
    model.update({ messages: [...model.get("messages"), toolResult("m2", "t1", "removed", { tool_name: "rm" })], running_tools: {} });
    expect(el.querySelector(".pi-tool").classList.contains("pi-tool-ok")).toBe(true);
    expect(el.querySelectorAll(".pi-tool").length).toBe(1);
  });

  it("shows several changes of one reply on one review card: per change, and accept all", () => {
    const preview = (title, extra = {}) => ({ title, language: "python", source: "x = 1", diff: "", always: false, ...extra });
    const pending = (id) => ({ tool_call_id: id, tool_name: "edit_cell", args: "", started_at: Date.now(), progress: "", progress_bundle: null, progress_images: [], approval: { state: "pending", timeout: 300, reason: "", preview: null, review: true } });
    const calls = ["e1", "e2", "e3"].map((id) => ({ type: "toolCall", id, name: "edit_cell", args: "{}", complete: true }));
    const change = (id, decision, extra = {}) => ({ tool_call_id: id, tool_name: "edit_cell", preview: preview(`Edit ${id}`, extra), decision });
    const { model, el } = mount(baseState({ status: "running_tools" }));
    model.update({ messages: [assistant("m1", calls, "toolUse")] });
    model.update({
      status: "awaiting_approval",
      running_tools: { e1: pending("e1"), e2: pending("e2"), e3: pending("e3") },
      review: { id: "review-1", timeout: 300, changes: [change("e1", "pending", { diff: "--- a\n+++ b\n-x = 0\n+x = 1" }), change("e2", "pending"), change("e3", "pending")] },
    });
    // the tool cards point at the review; only the review card has buttons
    expect(el.querySelectorAll(".pi-tool .pi-allow").length).toBe(0);
    expect(el.querySelector('.pi-tool[data-tool-call-id="e1"] .pi-approval-question').textContent).toContain("review");
    const card = el.querySelector(".pi-review");
    expect(card.querySelector(".pi-review-question").textContent).toContain("Review 3 changes");
    expect(card.querySelectorAll(".pi-review-change").length).toBe(3);
    expect(card.querySelector(".pi-diff-add").textContent).toBe("+x = 1\n");
    card.querySelector('.pi-review-change[data-tool-call-id="e2"] .pi-review-reject').click();
    expect(model.sent).toEqual([{ type: "review", review_id: "review-1", accept: false, tool_call_id: "e2" }]);
    model.update({ review: { id: "review-1", timeout: 300, changes: [change("e1", "pending"), change("e2", "rejected"), change("e3", "pending")] } });
    expect(el.querySelector('.pi-review-change[data-tool-call-id="e2"] .pi-review-decision').textContent).toBe("Rejected");
    el.querySelector(".pi-review-accept-all").click();
    expect(model.sent[1]).toEqual({ type: "review", review_id: "review-1", accept: true });
    model.update({ review: {}, status: "running_tools" });
    expect(el.querySelector(".pi-review")).toBeNull();
  });

  it("gives a running tool card its own stop, which sends stop_tool for that call only", () => {
    const running = (id, progress) => ({ tool_call_id: id, tool_name: "slow", args: "", started_at: Date.now(), progress, progress_bundle: null, progress_images: [], approval: null });
    const calls = [{ type: "toolCall", id: "t1", name: "slow", args: "{}", complete: true }, { type: "toolCall", id: "t2", name: "echo", args: "{}", complete: true }];
    const { model, el } = mount(baseState({ status: "running_tools", controls: { stop: true, steer: true, follow_up: true, tree: true, stop_tool: true } }));
    model.update({ messages: [assistant("m1", calls, "toolUse")], running_tools: { t1: running("t1", "step 1"), t2: running("t2", "") } });
    const card = (id) => el.querySelector(`.pi-tool[data-tool-call-id="${id}"]`);
    expect(card("t1").querySelectorAll(".pi-tool-stop").length).toBe(1);
    model.update({ running_tools: { t1: running("t1", "step 2"), t2: running("t2", "") } }); // a progress sync keeps one button
    expect(card("t1").querySelectorAll(".pi-tool-stop").length).toBe(1);
    card("t1").querySelector(".pi-tool-stop").click();
    expect(model.sent).toEqual([{ type: "stop_tool", tool_call_id: "t1" }]);
    expect(card("t1").querySelector(".pi-tool-stop").disabled).toBe(true);
    expect(card("t2").querySelector(".pi-tool-stop").disabled).toBe(false);
    // the stopped call ends with its error result: its button goes, the other call's stays
    model.update({ messages: [...model.get("messages"), toolResult("m2", "t1", "Tool call aborted by the user", { is_error: true })], running_tools: { t2: running("t2", "") } });
    expect(card("t1").querySelector(".pi-tool-stop")).toBeNull();
    expect(card("t1").classList.contains("pi-tool-error")).toBe(true);
    expect(card("t2").querySelector(".pi-tool-stop")).not.toBeNull();
    model.update({ status: "done", running_tools: {} });
    expect(el.querySelector(".pi-tool-stop")).toBeNull();
  });

  it("shows no card stop when the kernel has no handler for it", () => {
    const { model, el } = mount(baseState({ status: "running_tools" }));
    model.update({ messages: [assistant("m1", [{ type: "toolCall", id: "t1", name: "slow", args: "{}", complete: true }], "toolUse")], running_tools: { t1: { tool_call_id: "t1", tool_name: "slow", args: "", started_at: Date.now(), progress: "", progress_bundle: null, progress_images: [], approval: null } } });
    expect(el.querySelector(".pi-tool-stop")).toBeNull();
  });

  it("moves tool cards from the live message to the finished one", () => {
    const { model, el } = mount(baseState({ status: "streaming" }));
    model.set("current", assistant("m1", [{ type: "toolCall", id: "t1", name: "ls", args: '{"pa', complete: false }], null));
    expect(el.querySelector(".pi-live .pi-tool-args-text").textContent).toBe('{"pa');
    model.update({ messages: [assistant("m1", [{ type: "toolCall", id: "t1", name: "ls", args: '{\n  "path": "."\n}', complete: true }], "toolUse")], current: {} });
    expect(el.querySelectorAll(".pi-tool").length).toBe(1);
    expect(el.querySelector(".pi-transcript .pi-tool-args-text").textContent).toBe('{\n  "path": "."\n}');
  });

  it("sends stop, steering while live and a follow-up once done", () => {
    const { model, el } = mount(baseState({ status: "streaming" }));
    el.querySelector(".pi-stop-button").click();
    const input = el.querySelector(".pi-steer-input");
    input.value = "  be brief ";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    expect(input.value).toBe("");
    model.set("status", "done");
    expect(el.querySelector(".pi-send").textContent).toBe("Follow up");
    input.value = "and now?";
    el.querySelector(".pi-send").click();
    input.value = "   ";
    el.querySelector(".pi-send").click(); // blank: nothing sent
    expect(model.sent).toEqual([{ type: "stop" }, { type: "steer", text: "be brief" }, { type: "follow_up", text: "and now?" }]);
  });

  it("hides controls that have no handler in the kernel", () => {
    const { el } = mount(baseState({ controls: { stop: false, steer: false, follow_up: false, tree: false } }));
    expect(el.querySelector(".pi-controls").hidden).toBe(true);
    expect(el.querySelector(".pi-tree-button").hidden).toBe(true);
  });

  it("says when the model cannot call tools, and only then", () => {
    const { el, model } = mount(baseState());
    const notice = el.querySelector(".pi-answers-only");
    expect(notice.hidden).toBe(true);
    model.update({ header: { ...baseState().header, answers_only: true } });
    expect(notice.hidden).toBe(false);
    expect(notice.textContent).toBe("this model cannot call tools: answers only");
    model.update({ header: { ...baseState().header, answers_only: false } });
    expect(notice.hidden).toBe(true);
  });

  it("shows a compaction while it runs and its outcome", () => {
    const { el, model } = mount(baseState());
    const line = el.querySelector(".pi-compaction");
    expect(line.hidden).toBe(true);
    model.update({ header: { ...baseState().header, compaction: "compacting: 7,251 tokens → …" } });
    expect(line.hidden).toBe(false);
    expect(line.textContent).toBe("compacting: 7,251 tokens → …");
    model.update({ header: { ...baseState().header, compaction: "compacted: 7,251 → 2,100 tokens" } });
    expect(line.textContent).toBe("compacted: 7,251 → 2,100 tokens");
  });

  it("shows notices, errors and queued messages; asks for expansions", () => {
    const { model, el } = mount(baseState());
    model.update({ notice: "Steer failed: Cannot steer while idle", error: "The model request failed: 429", queued: [{ kind: "steer", text: "shorter" }] });
    expect(el.querySelector(".pi-notice").hidden).toBe(false);
    expect(el.querySelector(".pi-notice").textContent).toContain("Cannot steer while idle");
    el.querySelector(".pi-dismiss").click();
    expect(el.querySelector(".pi-run-error").textContent).toBe("The model request failed: 429");
    expect(el.querySelector(".pi-queued").textContent).toContain("shorter");
    model.set("messages", [assistant("m1", [{ type: "toolCall", id: "t1", name: "cat", args: "{}", complete: true }], "toolUse"), toolResult("m2", "t1", "x".repeat(100), { text_length: 90_000 })]);
    el.querySelector(".pi-expand").click();
    model.custom({ type: "expanded", tool_call_id: "t1", text: "y".repeat(90_000) });
    expect(el.querySelector(".pi-tool-result").textContent.length).toBe(90_000);
    el.querySelector(".pi-tree-button").click();
    expect(model.sent).toEqual([{ type: "dismiss_notice" }, { type: "expand", tool_call_id: "t1" }, { type: "open_tree" }]);
  });

  it("re-renders everything when the transcript is replaced", () => {
    const { model, el } = mount(baseState({ messages: [user("a", "one"), user("b", "two")] }));
    model.set("messages", [user("x", "other")]);
    expect(el.querySelector(".pi-transcript").textContent).toBe("other");
  });

  it("cleans up its listeners and keeps an unsent draft across re-renders", () => {
    const model = new FakeModel(baseState({ status: "streaming" }));
    const el = document.createElement("div");
    const cleanup = widget.render({ model, el });
    el.querySelector(".pi-steer-input").value = "half-written";
    el.querySelector(".pi-steer-input").dispatchEvent(new Event("input"));
    cleanup();
    expect(model.listenerCount()).toBe(0);
    const again = document.createElement("div");
    const cleanup2 = widget.render({ model, el: again });
    expect(again.querySelector(".pi-steer-input").value).toBe("half-written");
    cleanup2();
  });
});

describe("RunView reliability signs", () => {
  function clocked(state) {
    const model = new FakeModel(state);
    const el = document.createElement("div");
    const clock = { t: 1_000_000, tick: null };
    const view = new RunView(model, el, { now: () => clock.t, setInterval: (fn) => { clock.tick = fn; return 1; }, clearInterval: () => {} });
    views.push(view);
    const advance = (ms) => { clock.t += ms; clock.tick(); };
    return { model, el, advance };
  }

  it("shows the LLM layer's stall signal, counts on between signals, and clears when data flows", () => {
    const { model, el, advance } = clocked(baseState({ status: "streaming", messages: [user("m0", "hi")] }));
    const stall = el.querySelector(".pi-stall");
    advance(60_000);
    expect(stall.hidden).toBe(true); // no signal, no stall: the page's own clock does not decide
    model.set("stalled_ms", 5000);
    expect(stall.hidden).toBe(false);
    expect(stall.textContent).toBe("waiting for the model — 5 s");
    advance(2000);
    expect(stall.textContent).toBe("waiting for the model — 7 s");
    model.set("stalled_ms", 10_000);
    expect(stall.textContent).toBe("waiting for the model — 10 s");
    model.set("stalled_ms", 0);
    expect(stall.hidden).toBe(true);
  });

  it("shows no stall once the run is over", () => {
    const { model, el } = clocked(baseState({ status: "streaming", messages: [user("m0", "hi")], stalled_ms: 6000 }));
    expect(el.querySelector(".pi-stall").hidden).toBe(false);
    model.set("status", "error");
    expect(el.querySelector(".pi-stall").hidden).toBe(true);
  });

  it("says the usage of a stopped reply is unknown instead of showing zeros", () => {
    const zero = { input: 0, output: 0, cache_read: 0, cache_write: 0, total_tokens: 0, cost: 0 };
    const stopped = assistant("m1", [{ type: "text", text: "partial" }], "aborted", { usage: zero });
    const { el, model } = mount(baseState({ status: "aborted", header: { ...baseState().header, usage: zero }, messages: [user("m0", "hi"), stopped] }));
    expect(el.querySelector(".pi-usage").textContent).toBe("usage unknown: stopped");
    model.update({ header: { ...baseState().header }, messages: [user("m0", "hi"), assistant("m1", [{ type: "text", text: "ok" }]), user("m2", "more"), { ...stopped, id: "m3" }] });
    expect(el.querySelector(".pi-usage").textContent).toBe("↑1,200 ↓340 · $0.012 · stopped reply: usage unknown");
  });

  it("shows spending against each cap and marks one that is nearly used up", () => {
    const budget = [
      { scope: "run", kind: "cost", spent: 0.0123, cap: 0.2 },
      { scope: "run", kind: "turns", spent: 4, cap: 5 },
      { scope: "session", kind: "tokens", spent: 12_000, cap: 200_000 },
    ];
    const { el, model } = mount(baseState({ header: { ...baseState().header, budget } }));
    const meters = [...el.querySelectorAll(".pi-budget-meter")];
    expect(el.querySelector(".pi-budget").hidden).toBe(false);
    expect(meters.map((m) => m.textContent)).toEqual(["run $0.012/$0.200", "run 4/5 turns", "session 12k/200k tokens"]);
    expect(meters[1].classList.contains("pi-budget-high")).toBe(true);
    expect(meters[0].querySelector(".pi-budget-fill").style.width).toBe("6.2%");
    model.update({ header: { ...baseState().header, budget: [] } });
    expect(el.querySelector(".pi-budget").hidden).toBe(true);
  });

  it("says why a cap stopped the run instead of calling its unsent request's usage unknown", () => {
    const reason = "Budget: stopped, this run's cap of 3 turns reached.";
    const budgetStop = assistant("m2", [], "aborted", { error_message: reason, usage: { ...USAGE, input: 0, output: 0, cost: 0 } });
    const { el } = mount(baseState({ status: "aborted", messages: [user("m0", "go"), assistant("m1", [{ type: "text", text: "ok" }]), budgetStop] }));
    expect(el.querySelector(".pi-usage").textContent).toBe("↑1,200 ↓340 · $0.012");
    expect(el.querySelector(".pi-transcript").textContent).toContain(reason);
    expect(el.querySelector(".pi-transcript").textContent).not.toContain("Stopped. The partial reply");
  });
});

