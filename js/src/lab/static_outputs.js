// @ts-check
// Wires static_fallback.js to a JupyterLab notebook panel: whenever the cells' outputs change,
// each of our widget outputs the widget renderer could not show gets its static rendition.
import { showStaticRenditions } from "./static_fallback.js";

/** @param {import("./lab_types").NotebookPanel} panel */
function widgetOutputs(panel) {
  /** @type {{ node: HTMLElement, data: import("./lab_types").MimeData, trusted: boolean }[]} */
  const found = [];
  for (const cell of panel.content.widgets) {
    const area = cell.outputArea;
    if (!area || !area.model) continue;
    const model = area.model;
    area.widgets.forEach((child, index) => {
      const node = /** @type {HTMLElement | null} */ (child.node.querySelector(".jp-OutputArea-output"));
      const output = index < model.length ? model.get(index) : null;
      if (node && output) found.push({ node, data: output.data, trusted: output.trusted });
    });
  }
  return found;
}

/** @param {import("./lab_types").NotebookPanel} panel */
export function watchStaticOutputs(panel) {
  const rendermime = panel.content.rendermime;
  /**
   * @param {string} html
   * @param {boolean} trusted
   */
  const render = async (html, trusted) => {
    const renderer = rendermime.createRenderer("text/html");
    await renderer.renderModel({ trusted, data: { "text/html": html }, metadata: {}, setData() {} });
    return renderer.node;
  };
  let scheduled = false;
  const scan = () => {
    scheduled = false;
    if (panel.isDisposed) return;
    showStaticRenditions(widgetOutputs(panel), render).catch((error) => console.error(error));
  };
  // The renderer writes its error into its own node some time after the output appears (once
  // the widget manager has restored what it can). Only changes of a renderer node's own children
  // count: a live view streaming a reply changes nodes deeper down, many times a second.
  const observer = new MutationObserver((records) => {
    const rendererChanged = records.some(
      (record) => record.target instanceof Element && record.target.classList.contains("jp-OutputArea-output"),
    );
    if (rendererChanged && !scheduled) {
      scheduled = true;
      requestAnimationFrame(scan);
    }
  });
  observer.observe(panel.content.node, { childList: true, subtree: true });
  panel.disposed.connect(() => observer.disconnect());
}
