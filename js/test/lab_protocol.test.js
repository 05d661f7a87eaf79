import { describe, expect, it } from "vitest";
import { WorkspaceLink, boundedOutputs, freeCellId, summarizeOutput, summarizeOutputs } from "../src/lab/protocol.js";

// An in-memory notebook behind the adapter interface notebook_adapter.js gives over Lab's models.
function memoryNotebook(cells) {
  let next = 100;
  const index = (id) => {
    const at = cells.findIndex((cell) => cell.id === id);
    if (at < 0) throw new Error(`no cell with id ${id} in this notebook`);
    return at;
  };
  const executed = [];
  return {
    cells: () => cells.map((cell) => ({ ...cell })),
    insert(source, afterId, cellType, id) {
      const cell = { id: id ?? `new-${(next += 1)}`, cell_type: cellType, source, execution_count: null, outputs: [] };
      cells.splice(afterId === null ? cells.length : index(afterId) + 1, 0, cell);
      return cell.id;
    },
    edit(id, source) {
      cells[index(id)].source = source;
    },
    remove(id) {
      cells.splice(index(id), 1);
    },
    outputs: (id) => cells[index(id)].outputs,
    async execute(id) {
      index(id);
      executed.push(id);
    },
    state: cells,
    executed,
  };
}

function linked(cells) {
  const notebook = memoryNotebook(cells);
  const sent = [];
  const link = new WorkspaceLink(notebook, (data) => sent.push(data));
  return { notebook, sent, link };
}

describe("summarizeOutput", () => {
  it("reads streams, errors, plain text and names images", () => {
    expect(summarizeOutput({ output_type: "stream", name: "stdout", text: ["a\n", "b\n"] })).toBe("a\nb\n");
    expect(summarizeOutput({ output_type: "error", ename: "KeyError", evalue: "'x'", traceback: [] })).toBe("KeyError: 'x'");
    expect(summarizeOutput({ output_type: "execute_result", data: { "text/plain": "42" } })).toBe("42");
    expect(summarizeOutput({ output_type: "display_data", data: { "image/png": "iVBO", "text/plain": "<Figure>" } })).toBe("an image (image/png)");
    expect(summarizeOutput({ output_type: "display_data", data: { "application/x-thing": {} } })).toBe("output of type application/x-thing");
  });

  it("bounds a cell's outputs as a whole", () => {
    const outputs = [
      { output_type: "stream", name: "stdout", text: "x".repeat(50) },
      { output_type: "error", ename: "E", evalue: "v", traceback: [] },
    ];
    expect(summarizeOutputs(outputs, 10)).toEqual([{ kind: "stdout", text: `${"x".repeat(10)}… [40 more characters]` }]);
    expect(summarizeOutputs(outputs)).toEqual([
      { kind: "stdout", text: "x".repeat(50) },
      { kind: "stderr", text: "E: v" },
    ]);
  });

  it("keeps whole outputs up to a size", () => {
    const small = { output_type: "stream", text: "a" };
    const big = { output_type: "display_data", data: { "image/png": "x".repeat(200) } };
    expect(boundedOutputs([small, big, small], 100)).toEqual([small, small]);
  });
});

describe("WorkspaceLink", () => {
  it("says hello with the protocol version", () => {
    const { link, sent } = linked([]);
    link.hello({ app: "JupyterLab", version: "4.6.6", path: "a.ipynb" });
    expect(sent).toEqual([{ type: "hello", protocol: 1, app: "JupyterLab", version: "4.6.6", path: "a.ipynb" }]);
  });

  it("answers every request once, with its id", async () => {
    const { link, sent, notebook } = linked([
      { id: "a", cell_type: "code", source: "%%agent\nplot it", execution_count: 1, outputs: [{ output_type: "stream", text: "hi" }] },
      { id: "b", cell_type: "markdown", source: "# notes", execution_count: null, outputs: [] },
    ]);
    await link.handle({ type: "request", id: 1, op: "cells" });
    expect(sent[0]).toEqual({
      type: "reply",
      id: 1,
      ok: true,
      result: [
        { id: "a", cell_type: "code", source: "%%agent\nplot it", execution_count: 1, outputs: [{ kind: "stdout", text: "hi" }] },
        { id: "b", cell_type: "markdown", source: "# notes", execution_count: null, outputs: [] },
      ],
    });
    await link.handle({ type: "request", id: 2, op: "insert", source: "df.describe()", after_cell_id: "a" });
    expect(sent[1]).toEqual({ type: "reply", id: 2, ok: true, result: { id: "new-101" } });
    expect(notebook.state.map((cell) => cell.id)).toEqual(["a", "new-101", "b"]);
    await link.handle({ type: "request", id: 3, op: "edit", cell_id: "new-101", source: "df.head()" });
    expect(notebook.state[1].source).toBe("df.head()");
    await link.handle({ type: "request", id: 4, op: "execute", cell_id: "new-101" });
    expect(notebook.executed).toEqual(["new-101"]);
    await link.handle({ type: "request", id: 5, op: "outputs", cell_id: "a" });
    expect(sent[4].result).toEqual([{ output_type: "stream", text: "hi" }]);
    await link.handle({ type: "request", id: 6, op: "delete", cell_id: "new-101" });
    expect(notebook.state.map((cell) => cell.id)).toEqual(["a", "b"]);
    expect(sent.map((reply) => reply.id)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("turns what cannot be done into an error reply, changing nothing", async () => {
    const { link, sent, notebook } = linked([{ id: "a", cell_type: "code", source: "1", execution_count: null, outputs: [] }]);
    await link.handle({ type: "request", id: 7, op: "edit", cell_id: "zzz", source: "x" });
    await link.handle({ type: "request", id: 8, op: "insert", source: "x", after_cell_id: "a", cell_type: "heading" });
    await link.handle({ type: "request", id: 9, op: "insert", after_cell_id: "a" });
    await link.handle({ type: "request", id: 10, op: "format_disk" });
    await link.handle({ type: "hello" });
    expect(sent).toEqual([
      { type: "reply", id: 7, ok: false, error: "no cell with id zzz in this notebook" },
      { type: "reply", id: 8, ok: false, error: "unknown cell type heading" },
      { type: "reply", id: 9, ok: false, error: "the request has no source string" },
      { type: "reply", id: 10, ok: false, error: 'unknown request "format_disk"' },
    ]);
    expect(notebook.state).toHaveLength(1);
  });

  it("gives an inserted cell the id the kernel asks for, made unique", async () => {
    const { link, sent, notebook } = linked([{ id: "agent-call_1", cell_type: "code", source: "1", execution_count: null, outputs: [] }]);
    await link.handle({ type: "request", id: 1, op: "insert", source: "2", after_cell_id: null, cell_id: "agent-call_2" });
    await link.handle({ type: "request", id: 2, op: "insert", source: "3", after_cell_id: null, cell_id: "agent-call_1" });
    await link.handle({ type: "request", id: 3, op: "insert", source: "4", after_cell_id: null, cell_id: "agent-call_1" });
    await link.handle({ type: "request", id: 4, op: "insert", source: "5", after_cell_id: null, cell_id: "no spaces" });
    expect(sent.map((reply) => reply.result?.id ?? reply.error)).toEqual([
      "agent-call_2",
      "agent-call_1-2",
      "agent-call_1-3",
      'not a valid cell id: "no spaces"',
    ]);
    expect(notebook.state).toHaveLength(4);
    expect(freeCellId("x".repeat(64), ["x".repeat(64)])).toBe(`${"x".repeat(62)}-2`);
  });

  it("appends at the end when no anchor cell is given", async () => {
    const { link, notebook } = linked([{ id: "a", cell_type: "code", source: "1", execution_count: null, outputs: [] }]);
    await link.handle({ type: "request", id: 1, op: "insert", source: "# end", after_cell_id: null, cell_type: "markdown" });
    expect(notebook.state.map((cell) => [cell.id, cell.cell_type])).toEqual([["a", "code"], ["new-101", "markdown"]]);
  });
});

describe("the session follows the notebook", () => {
  it("sends the new path, keeps the kernel's session id and shows its notices", async () => {
    const kept = [];
    const notices = [];
    const sent = [];
    const adapter = { keepSession: (id) => kept.push(id), notify: (text) => notices.push(text) };
    const link = new WorkspaceLink(adapter, (data) => sent.push(data));
    link.hello({ app: "JupyterLab", version: "4", path: "Untitled.ipynb", session_id: null });
    link.pathChanged("sales.ipynb");
    expect(sent).toEqual([
      { type: "hello", protocol: 1, app: "JupyterLab", version: "4", path: "Untitled.ipynb", session_id: null },
      { type: "path", path: "sales.ipynb" },
    ]);
    await link.handle({ type: "session", session_id: "0193-abc" });
    await link.handle({ type: "notice", text: "pi_notebook: moved" });
    await link.handle({ type: "session", session_id: 42 }); // not an id: ignored
    expect(kept).toEqual(["0193-abc"]);
    expect(notices).toEqual(["pi_notebook: moved"]);
    expect(sent).toHaveLength(2); // no replies to these
  });
});
