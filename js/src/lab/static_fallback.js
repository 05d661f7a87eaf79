// @ts-check
// Shows a run view's or a session tree's static rendition where JupyterLab cannot show the
// widget. JupyterLab saves no widget state by default, so after the notebook is reopened (or its
// kernel restarted) the widget renderer finds no model and writes "Error displaying widget: model
// not found", ignoring the text/html the same output carries. nbconvert and static viewers show
// that text/html already; this puts it in the page too. Free of JupyterLab imports so it can be
// tested alone: the caller passes the notebook's outputs and an HTML renderer.

export const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";

// The classes our widgets' text/html renditions carry (pi_notebook/notebook/widgets/run_view.py and
// tree_view.py): only our own widgets' outputs are touched.
const OUR_RENDITIONS = /class="pi-(run|tree)-static"/;

// What the widget renderer shows when it cannot render the model (ipywidgets 8).
const WIDGET_ERROR = "Error displaying widget";

/** @param {unknown} value nbformat text: a string or lines */
function joined(value) {
  return Array.isArray(value) ? value.join("") : String(value ?? "");
}

// The static HTML of one of our widget outputs (its nbformat `data`), or null.
/**
 * @param {unknown} data
 * @returns {string | null}
 */
export function staticRendition(data) {
  if (!data || typeof data !== "object" || !(WIDGET_MIME in data)) return null;
  const html = "text/html" in data ? joined(data["text/html"]) : "";
  return OUR_RENDITIONS.test(html) ? html : null;
}

// Whether the widget renderer's node says it could not show the widget.
/** @param {Node} node */
export function widgetFailed(node) {
  return (node.textContent || "").trim().startsWith(WIDGET_ERROR);
}

// Replace each failed widget among `outputs` ({node, data, trusted}) by its static rendition:
// `render(html, trusted)` resolves to a DOM node. Returns how many it replaced.
/**
 * @param {{ node: HTMLElement, data: unknown, trusted: boolean }[]} outputs
 * @param {(html: string, trusted: boolean) => Promise<Node>} render
 */
export async function showStaticRenditions(outputs, render) {
  let replaced = 0;
  for (const { node, data, trusted } of outputs) {
    const html = staticRendition(data);
    if (html === null || !widgetFailed(node)) continue;
    node.dataset.piStatic = "shown";
    const rendered = await render(html, trusted);
    node.replaceChildren(rendered);
    node.title = "A saved copy: the live view ended with its kernel. Re-run the cell for a live one.";
    replaced += 1;
  }
  return replaced;
}
