import { describe, expect, it, vi } from "vitest";
import { AssistantView, ToolCard, renderItem, renderMimeBundle, stopReasonText } from "../src/items.js";

const PNG = "iVBORw0KGgo=";

describe("renderMimeBundle", () => {
  it("prefers sanitised HTML, mounted in a shadow root so its styles stay inside", () => {
    const el = renderMimeBundle({
      "text/html": '<style>td { color: red }</style><table><tr><td onclick="steal()">1</td></tr></table><script>window.pwned = 1</script>',
      "text/plain": "plain",
    });
    const root = el.shadowRoot;
    expect(root).toBeTruthy();
    expect(root.querySelector("style").textContent).toContain("color: red");
    expect(root.querySelector("td").textContent).toBe("1");
    expect(root.querySelector("td").getAttribute("onclick")).toBeNull();
    expect(root.querySelector("script")).toBeNull();
    expect(window.pwned).toBeUndefined();
  });

  it("falls back to Markdown, then images, then plain text", () => {
    expect(renderMimeBundle({ "text/markdown": "**bold**", "image/png": PNG }).querySelector("strong").textContent).toBe("bold");
    expect(renderMimeBundle({ "image/png": `${PNG}\n`, "text/plain": "x" }).querySelector("img").getAttribute("src")).toBe(`data:image/png;base64,${PNG}`);
    const svg = renderMimeBundle({ "image/svg+xml": '<svg onload="x()"></svg>' }).querySelector("img");
    expect(svg.getAttribute("src")).toMatch(/^data:image\/svg\+xml;charset=utf-8,/);
    expect(renderMimeBundle({ "text/plain": "a < b" }).textContent).toBe("a < b");
    expect(renderMimeBundle({})).toBeNull();
    expect(renderMimeBundle(null)).toBeNull();
  });
});

describe("ToolCard", () => {
  it("goes from streaming arguments to running, approval, and a result", () => {
    const onApproval = vi.fn();
    const card = new ToolCard("call_1", "bash", { onApproval });
    card.setCall({ name: "bash", args: '{"command": "l', complete: false });
    expect(card.el.querySelector(".pi-tool-args-text").textContent).toBe('{"command": "l');
    expect(card.stateEl.textContent).toBe("preparing…");
    card.setCall({ name: "bash", args: '{\n  "command": "ls"\n}', complete: true });
    expect(card.stateEl.textContent).toBe("queued");

    const startedAt = Date.now() - 2500;
    card.setRunning({ tool_call_id: "call_1", tool_name: "bash", args: "", started_at: startedAt, progress: "line 1", progress_bundle: null, progress_images: [], approval: null });
    expect(card.el.classList.contains("pi-tool-running")).toBe(true);
    expect(card.progressEl.textContent).toBe("line 1");
    card.tick(startedAt + 2500);
    expect(card.stateEl.textContent).toBe("running · 2.5 s");

    card.setRunning({ tool_call_id: "call_1", tool_name: "bash", args: "", started_at: startedAt, progress: "", progress_bundle: null, progress_images: [], approval: { state: "pending", timeout: 30, reason: "" } });
    const [allow, deny] = card.el.querySelectorAll(".pi-tool-approval button");
    expect(card.el.querySelector(".pi-approval-question").textContent).toContain("30 s");
    allow.click();
    expect(onApproval).toHaveBeenCalledWith("call_1", true);
    expect(allow.disabled && deny.disabled).toBe(true);

    card.setResult({ kind: "tool_result", id: "r1", tool_call_id: "call_1", tool_name: "bash", is_error: false, text: "a\nb", text_length: 3, images: [], mime_bundle: null, duration_ms: 1234, approval: { state: "allowed", timeout: 30, reason: "" } });
    expect(card.el.classList.contains("pi-tool-ok")).toBe(true);
    expect(card.stateEl.textContent).toBe("done · 1.2 s");
    expect(card.resultEl.textContent).toBe("a\nb");
    expect(card.approvalEl.textContent).toBe("Allowed.");
    expect(card.progressEl.textContent).toBe("");
    card.setRunning({ started_at: 0, approval: null }); // a stale update after the end changes nothing
    expect(card.el.classList.contains("pi-tool-ok")).toBe(true);
  });

  it("shows a timed-out approval in plain words", () => {
    const card = new ToolCard("c", "rm");
    card.setRunning({ started_at: Date.now(), progress: "", approval: { state: "timed_out", timeout: 5, reason: "" } });
    expect(card.approvalEl.textContent).toBe("No answer within 5 s: the request timed out.");
  });

  it("offers the full text of a truncated result on request", () => {
    const onExpand = vi.fn();
    const card = new ToolCard("c", "cat", { onExpand });
    card.setResult({ tool_call_id: "c", tool_name: "cat", is_error: false, text: "x".repeat(10), text_length: 50_000, images: [], mime_bundle: null, duration_ms: 5, approval: null });
    const more = card.resultEl.querySelector(".pi-expand");
    expect(more.textContent).toBe("Show all (50k characters)");
    more.click();
    expect(onExpand).toHaveBeenCalledWith("c");
    card.setExpandedText("y".repeat(50_000));
    expect(card.resultEl.textContent.length).toBe(50_000);
  });

  it("shows errors and rich results", () => {
    const card = new ToolCard("c", "plot");
    card.setResult({ tool_call_id: "c", tool_name: "plot", is_error: true, text: "boom", text_length: 4, images: [], mime_bundle: { "text/html": "<b>x</b>" }, duration_ms: null, approval: null });
    expect(card.el.classList.contains("pi-tool-error")).toBe(true);
    expect(card.resultEl.querySelector(".pi-tool-error-text").textContent).toBe("boom");
    const rich = new ToolCard("d", "plot");
    rich.setResult({ tool_call_id: "d", tool_name: "plot", is_error: false, text: "<Figure>", text_length: 8, images: [{ mime_type: "image/png", data: PNG }], mime_bundle: { "image/png": PNG, "text/plain": "<Figure>" }, duration_ms: 3, approval: null });
    expect(rich.resultEl.querySelectorAll("img").length).toBe(1); // the bundle's, not a duplicate
    expect(rich.resultEl.textContent).not.toContain("<Figure>");
  });
});

describe("transcript items", () => {
  it("renders a tool result inside the card of its call", () => {
    const cards = new Map();
    const assistant = renderItem({ kind: "assistant", id: "m1", blocks: [{ type: "text", text: "Let me look." }, { type: "toolCall", id: "t1", name: "ls", args: "{}", complete: true }], stop_reason: "toolUse", error_message: null, model: "faux/m", usage: null }, cards, {});
    const result = renderItem({ kind: "tool_result", id: "m2", tool_call_id: "t1", tool_name: "ls", is_error: false, text: "a.txt", text_length: 5, images: [], mime_bundle: null, duration_ms: 1, approval: null }, cards, {});
    expect(result).toBeNull();
    expect(assistant.querySelector(".pi-tool .pi-tool-result").textContent).toBe("a.txt");
    const orphan = renderItem({ kind: "tool_result", id: "m3", tool_call_id: "t9", tool_name: "cat", is_error: false, text: "z", text_length: 1, images: [], mime_bundle: null, duration_ms: 1, approval: null }, cards, {});
    expect(orphan.querySelector(".pi-tool-name").textContent).toBe("cat");
  });

  it("marks steering and follow-up messages where they were injected", () => {
    const steer = renderItem({ kind: "user", id: "u", text: "be brief", images: [], origin: "steer" }, new Map(), {});
    expect(steer.querySelector(".pi-badge").textContent).toBe("steering");
    const prompt = renderItem({ kind: "user", id: "p", text: "hi", images: [], origin: "prompt" }, new Map(), {});
    expect(prompt.querySelector(".pi-badge")).toBeNull();
  });

  it("has no stray text in a reply's footer", () => {
    const plain = new AssistantView({ id: "m", blocks: [{ type: "text", text: "Hi" }], stop_reason: "stop", usage: null }, new Map(), {});
    expect(plain.footEl.textContent).toBe("");
    const failed = new AssistantView({ id: "m", blocks: [], stop_reason: "error", error_message: "boom", usage: { input: 5, output: 1, cache_read: 0, cache_write: 0, cost: 0 } }, new Map(), {});
    expect(failed.footEl.textContent).toBe("The model request failed: boom5 in · 1 out · $0");
  });

  it("says what happened when a reply was stopped or failed", () => {
    expect(stopReasonText({ stop_reason: "aborted" })).toMatch(/partial reply above is kept/);
    expect(stopReasonText({ stop_reason: "error", error_message: "401 invalid key" })).toBe("The model request failed: 401 invalid key");
    expect(stopReasonText({ stop_reason: "stop" })).toBe("");
  });

  it("keeps thinking in a collapsible block, open only while streaming", () => {
    const live = new AssistantView({ id: "m", blocks: [{ type: "thinking", text: "hmm", redacted: false }], stop_reason: null }, new Map(), {});
    expect(live.el.querySelector("details.pi-thinking").open).toBe(true);
    const done = new AssistantView({ id: "m", blocks: [{ type: "thinking", text: "hmm", redacted: false }], stop_reason: "stop" }, new Map(), {});
    expect(done.el.querySelector("details.pi-thinking").open).toBe(false);
    expect(done.el.querySelector(".pi-thinking-body").textContent.trim()).toBe("hmm");
  });

  it("updates a streaming message block by block", () => {
    const view = new AssistantView({ id: "m", blocks: [{ type: "text", text: "Hel" }], stop_reason: null }, new Map(), {});
    const textEl = view.el.querySelector(".pi-text");
    view.update({ id: "m", blocks: [{ type: "text", text: "Hello" }, { type: "toolCall", id: "t", name: "f", args: '{"a"', complete: false }], stop_reason: null });
    expect(view.el.querySelector(".pi-text")).toBe(textEl);
    expect(textEl.textContent.trim()).toBe("Hello");
    expect(view.el.querySelector(".pi-tool-args-text").textContent).toBe('{"a"');
  });
});

describe("approval previews (the notebook's write tools)", () => {
  const running = (approval) => ({ tool_call_id: "c1", tool_name: "edit_cell", args: "{}", started_at: Date.now(), progress: "", progress_bundle: null, progress_images: [], approval });

  it("shows an edit as a coloured diff, and keeps it folded once answered", () => {
    const answers = [];
    const card = new ToolCard("c1", "edit_cell", { onApproval: (...args) => answers.push(args) });
    const preview = { title: "Edit code cell In [2] (ab12: 'x = 1')", language: "python", source: "x = 2", diff: "--- cell (now)\n+++ cell (proposed)\n@@ -1 +1 @@\n-x = 1\n+x = 2", always: false };
    card.setRunning(running({ state: "pending", timeout: null, reason: "", preview }));
    expect(card.el.querySelector(".pi-approval-question").textContent).toBe("Edit code cell In [2] (ab12: 'x = 1')?");
    expect(card.el.querySelector(".pi-diff-del").textContent).toBe("-x = 1\n");
    expect(card.el.querySelector(".pi-diff-add").textContent).toBe("+x = 2\n");
    expect(card.el.querySelector(".pi-approval-preview").open).toBe(true);
    expect(card.el.querySelector(".pi-allow-always")).toBeNull();
    const allow = card.el.querySelector(".pi-allow");
    card.setRunning(running({ state: "pending", timeout: null, reason: "", preview })); // a progress sync
    expect(card.el.querySelector(".pi-allow")).toBe(allow); // the same button: not rebuilt
    allow.click();
    expect(answers).toEqual([["c1", true]]);
    card.setRunning(running({ state: "allowed", timeout: null, reason: "", preview }));
    expect(card.approvalEl.querySelector(".pi-approval-allowed").textContent).toBe("Allowed.");
    expect(card.el.querySelector(".pi-approval-preview").open).toBe(false);
  });

  it("shows the proposed source and offers always-allow where the kernel does", () => {
    const answers = [];
    const card = new ToolCard("c2", "run_cell", { onApproval: (...args) => answers.push(args) });
    const preview = { title: "Run code cell (cd34: 'df.plot()')", language: "python", source: "df.plot()", diff: "", always: true };
    card.setRunning(running({ state: "pending", timeout: 300, reason: "", preview }));
    expect(card.el.querySelector(".pi-approval-source").textContent).toBe("df.plot()");
    expect(card.el.querySelector(".pi-approval-question").textContent).toContain("300 s");
    card.el.querySelector(".pi-allow-always").click();
    expect(answers).toEqual([["c2", true, true]]);
    for (const button of card.el.querySelectorAll(".pi-tool-approval button")) expect(button.disabled).toBe(true);
  });
});
