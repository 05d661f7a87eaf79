// @ts-check
// The adapter WorkspaceLink needs, over a JupyterLab NotebookPanel. Cells are read from the
// notebook's cell models (what the view shows and the file saves) and changed through its shared
// model, the way the editor's own commands change it; a cell is run with CodeCell.execute, the
// path Shift+Enter takes, so the kernel sees an ordinary execute_request carrying the cell's id.
import { Notification } from "@jupyterlab/apputils";
import { CodeCell } from "@jupyterlab/cells";

/** @typedef {import("./lab_types").NotebookPanel} NotebookPanel */

export const METADATA_KEY = "pi_notebook";

/**
 * What the notebook keeps under METADATA_KEY (other keys are left as they are).
 * @param {unknown} value
 * @returns {{ session_id?: unknown, [key: string]: unknown }}
 */
function keptMetadata(value) {
  return value && typeof value === "object" ? /** @type {Record<string, unknown>} */ (value) : {};
}

// The session id the notebook keeps in its metadata (null without one).
/**
 * @param {NotebookPanel} panel
 * @returns {string | null}
 */
export function keptSession(panel) {
  const kept = keptMetadata(panel.content.model?.getMetadata(METADATA_KEY));
  return typeof kept.session_id === "string" ? kept.session_id : null;
}

/** @param {NotebookPanel} panel */
function notebookModel(panel) {
  const model = panel.content.model;
  if (!model) throw new Error("the notebook is not loaded");
  return model;
}

/** @param {NotebookPanel} panel */
function cellModels(panel) {
  const cells = notebookModel(panel).cells;
  /** @type {import("./lab_types").CellModel[]} */
  const list = [];
  for (let i = 0; i < cells.length; i += 1) list.push(cells.get(i));
  return list;
}

/**
 * @param {NotebookPanel} panel
 * @param {string} id
 */
function cellIndex(panel, id) {
  const index = cellModels(panel).findIndex((cell) => cell.id === id);
  if (index < 0) throw new Error(`no cell with id ${id} in this notebook`);
  return index;
}

/**
 * @param {NotebookPanel} panel
 * @returns {import("./lab_types").NotebookAdapter}
 */
export function notebookAdapter(panel) {
  return {
    keepSession(id) {
      const model = notebookModel(panel);
      const kept = keptMetadata(model.getMetadata(METADATA_KEY));
      if (kept.session_id !== id) model.setMetadata(METADATA_KEY, { ...kept, session_id: id });
    },
    notify(text) {
      Notification.warning(text, { autoClose: false });
    },
    cells() {
      return cellModels(panel).map((cell) => {
        const json = cell.toJSON();
        return {
          id: cell.id,
          cell_type: json.cell_type,
          source: cell.sharedModel.getSource(),
          execution_count: json.cell_type === "code" ? json.execution_count : null,
          outputs: json.cell_type === "code" ? json.outputs : [],
        };
      });
    },
    insert(source, afterId, cellType, id) {
      const index = afterId === null ? cellModels(panel).length : cellIndex(panel, afterId) + 1;
      // the shared model takes the id it is given (a fresh uuid without one)
      const cell = notebookModel(panel).sharedModel.insertCell(index, {
        cell_type: cellType,
        source,
        metadata: {},
        ...(id === undefined ? {} : { id }),
      });
      return cell.getId();
    },
    edit(id, source) {
      cellModels(panel)[cellIndex(panel, id)].sharedModel.setSource(source);
    },
    remove(id) {
      notebookModel(panel).sharedModel.deleteCell(cellIndex(panel, id));
    },
    outputs(id) {
      const json = cellModels(panel)[cellIndex(panel, id)].toJSON();
      return json.cell_type === "code" ? json.outputs : [];
    },
    async execute(id) {
      const widget = panel.content.widgets.find((cell) => cell.model.id === id);
      if (!widget) throw new Error(`no cell with id ${id} in this notebook`);
      if (!(widget instanceof CodeCell)) throw new Error(`cell ${id} is not a code cell`);
      // Not awaited: the kernel learns the outcome from its own execution history.
      CodeCell.execute(widget, panel.sessionContext).catch(() => undefined);
    },
  };
}
