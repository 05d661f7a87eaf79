// @ts-check
// The workspace channel's front-end half, free of JupyterLab imports so it can be tested alone.
// The kernel (pi_notebook/notebook/workspace/channel.py) sends requests on a comm; each gets
// exactly one reply with the same id. The notebook itself is reached through an adapter
// (lab/notebook_adapter.js) so this file only knows the protocol, never the DOM.

/**
 * @typedef {import("./lab_types").Output} Output
 * @typedef {import("./lab_types").OutputSummary} OutputSummary
 * @typedef {import("./lab_types").NotebookAdapter} NotebookAdapter
 * @typedef {import("./lab_types").KernelMessage} KernelMessage
 * @typedef {import("./lab_types").LinkMessage} LinkMessage
 * @typedef {Extract<KernelMessage, { type: "request" }>} WorkspaceRequest
 */

export const TARGET = "pi_notebook.workspace";
export const PROTOCOL_VERSION = 1;
export const OUTPUT_SUMMARY_CHARS = 2000;
export const OUTPUTS_MAX_CHARS = 4_000_000; // a cell's outputs sent whole (its images for the model)

/**
 * @param {string} text
 * @param {number} max
 */
function clipText(text, max) {
  const value = String(text ?? "");
  return value.length > max ? `${value.slice(0, max)}… [${value.length - max} more characters]` : value;
}

/** @param {unknown} value nbformat text: a string or lines */
function joined(value) {
  return Array.isArray(value) ? value.join("") : String(value ?? "");
}

// One output (nbformat JSON) as a short line of text the model can read.
/**
 * @param {Output | null | undefined} output
 * @returns {string}
 */
export function summarizeOutput(output) {
  if (!output) return "";
  if (output.output_type === "stream") return joined(output.text);
  if (output.output_type === "error") return `${output.ename}: ${output.evalue}`;
  if (output.output_type === "execute_result" || output.output_type === "display_data") {
    const data = output.data || {};
    const image = Object.keys(data).find((mime) => mime.startsWith("image/"));
    if (typeof data["text/html"] !== "undefined" && /<table/i.test(joined(data["text/html"])) && data["text/plain"]) {
      return joined(data["text/plain"]);
    }
    if (image) return `an image (${image})`;
    if (typeof data["text/plain"] !== "undefined") return joined(data["text/plain"]);
    const types = Object.keys(data);
    return types.length ? `output of type ${types.join(", ")}` : "";
  }
  return "";
}

// The kind the kernel's history uses for an output: "stdout", "stderr" or "display".
/**
 * @param {Output | null | undefined} output
 * @returns {OutputSummary["kind"]}
 */
export function outputKind(output) {
  if (!output) return "display";
  if (output.output_type === "stream") return output.name === "stderr" ? "stderr" : "stdout";
  if (output.output_type === "error") return "stderr";
  return "display";
}

// Every output of a cell as {kind, text}, bounded as a whole (later ones are cut, then dropped).
/**
 * @param {Output[] | null | undefined} outputs
 * @param {number} [max]
 */
export function summarizeOutputs(outputs, max = OUTPUT_SUMMARY_CHARS) {
  /** @type {OutputSummary[]} */
  const summaries = [];
  let left = max;
  for (const output of outputs || []) {
    const text = summarizeOutput(output);
    if (text === "") continue;
    if (left <= 0) break;
    summaries.push({ kind: outputKind(output), text: clipText(text, left) });
    left -= text.length;
  }
  return summaries;
}

/**
 * @param {WorkspaceRequest} request
 * @param {string} name
 */
function requireString(request, name) {
  const value = request[name];
  if (typeof value !== "string") throw new Error(`the request has no ${name} string`);
  return value;
}

// A cell's outputs (nbformat JSON) whole, but none beyond `max` characters in all.
/**
 * @param {Output[] | null | undefined} outputs
 * @param {number} [max]
 */
export function boundedOutputs(outputs, max = OUTPUTS_MAX_CHARS) {
  /** @type {Output[]} */
  const kept = [];
  let size = 0;
  for (const output of outputs || []) {
    const length = JSON.stringify(output).length;
    if (size + length > max) continue;
    size += length;
    kept.push(output);
  }
  return kept;
}

const CELL_TYPES = ["code", "markdown", "raw"];

/**
 * @param {unknown} value
 * @returns {value is import("./lab_types").CellType}
 */
function isCellType(value) {
  return typeof value === "string" && CELL_TYPES.includes(value);
}

// An nbformat cell id (4.5): the kernel may ask for one when it inserts a cell.
const CELL_ID = /^[A-Za-z0-9_-]{1,64}$/;

// `wanted`, or `wanted-2`, `wanted-3`... when the notebook already has a cell with that id.
/**
 * @param {string} wanted
 * @param {Iterable<string>} taken
 */
export function freeCellId(wanted, taken) {
  const ids = new Set(taken);
  if (!ids.has(wanted)) return wanted;
  for (let n = 2; ; n += 1) {
    const id = `${wanted.slice(0, 64 - String(n).length - 1)}-${n}`;
    if (!ids.has(id)) return id;
  }
}

// Answers the kernel's requests against one notebook. `adapter` has cells(), insert(source,
// afterId, cellType, id), edit(id, source), remove(id), execute(id) and outputs(id); each throws an
// Error with a plain-words message when it cannot do what was asked.
export class WorkspaceLink {
  /**
   * @param {NotebookAdapter} adapter
   * @param {(message: LinkMessage) => void} send
   */
  constructor(adapter, send) {
    this.adapter = adapter;
    this.send = send;
  }

  /** @param {{ app: string, version: string, path: string, session_id: string | null }} info */
  hello(info) {
    this.send({ type: "hello", protocol: PROTOCOL_VERSION, ...info });
  }

  // The notebook was renamed or moved: its session file follows it.
  /** @param {string} path */
  pathChanged(path) {
    this.send({ type: "path", path });
  }

  /** @param {KernelMessage | null | undefined} data a comm message's data, as the kernel sent it */
  async handle(data) {
    if (data && data.type === "session" && typeof data.session_id === "string") {
      // the session this notebook works in: kept in its metadata, so a moved or copied
      // notebook finds its own session again
      this.adapter.keepSession(data.session_id);
      return;
    }
    if (data && data.type === "notice" && typeof data.text === "string") {
      this.adapter.notify(data.text);
      return;
    }
    if (!data || data.type !== "request") return;
    const id = data.id;
    try {
      const result = await this.run(data);
      this.send({ type: "reply", id, ok: true, result });
    } catch (error) {
      this.send({ type: "reply", id, ok: false, error: error instanceof Error ? error.message || String(error) : String(error) });
    }
  }

  /** @param {WorkspaceRequest} request */
  async run(request) {
    const adapter = this.adapter;
    switch (request.op) {
      case "cells":
        return adapter.cells().map((cell) => ({
          id: cell.id,
          cell_type: cell.cell_type,
          source: cell.source,
          execution_count: cell.execution_count ?? null,
          outputs: summarizeOutputs(cell.outputs),
        }));
      case "insert": {
        const cellType = request.cell_type || "code";
        if (!isCellType(cellType)) throw new Error(`unknown cell type ${cellType}`);
        const after = request.after_cell_id ?? null;
        if (after !== null && typeof after !== "string") throw new Error("the request's after_cell_id is not a string");
        const source = requireString(request, "source");
        const wanted = request.cell_id;
        if (wanted !== undefined && (typeof wanted !== "string" || !CELL_ID.test(wanted))) {
          throw new Error(`not a valid cell id: ${JSON.stringify(wanted)}`);
        }
        const id = wanted === undefined ? undefined : freeCellId(wanted, adapter.cells().map((cell) => cell.id));
        return { id: adapter.insert(source, after, cellType, id) };
      }
      case "edit":
        adapter.edit(requireString(request, "cell_id"), requireString(request, "source"));
        return {};
      case "delete":
        adapter.remove(requireString(request, "cell_id"));
        return {};
      case "outputs":
        return boundedOutputs(adapter.outputs(requireString(request, "cell_id")));
      case "execute":
        await adapter.execute(requireString(request, "cell_id"));
        return {};
      default:
        throw new Error(`unknown request ${JSON.stringify(request.op)}`);
    }
  }
}
