import { describe, expect, it } from "vitest";
import { WIDGET_MIME, showStaticRenditions, staticRendition, widgetFailed } from "../src/lab/static_fallback.js";

const RUN_HTML = '<div class="pi-run-static" style="x"><div>a run</div></div>';
const TREE_HTML = ['<pre class="pi-tree-static" style="x">', "a tree</pre>"];

function rendererNode(text) {
  const node = document.createElement("div");
  node.className = "jp-OutputArea-output";
  node.textContent = text;
  return node;
}

const html = async (source, trusted) => {
  const host = document.createElement("div");
  host.innerHTML = source;
  host.dataset.trusted = String(trusted);
  return host;
};

describe("staticRendition", () => {
  it("takes the text/html of our widgets' outputs only", () => {
    const view = { model_id: "m1", version_major: 2, version_minor: 1 };
    expect(staticRendition({ [WIDGET_MIME]: view, "text/html": RUN_HTML })).toBe(RUN_HTML);
    expect(staticRendition({ [WIDGET_MIME]: view, "text/html": TREE_HTML })).toBe(TREE_HTML.join(""));
    expect(staticRendition({ [WIDGET_MIME]: view, "text/html": "<b>someone else's widget</b>" })).toBeNull();
    expect(staticRendition({ "text/html": RUN_HTML })).toBeNull();
    expect(staticRendition({ [WIDGET_MIME]: view })).toBeNull();
    expect(staticRendition(undefined)).toBeNull();
  });
});

describe("showStaticRenditions", () => {
  it("replaces a widget the renderer could not show, and nothing else", async () => {
    const failed = rendererNode("Error displaying widget: model not found");
    const loading = rendererNode("Loading widget...");
    const foreign = rendererNode("Error displaying widget: model not found");
    const outputs = [
      { node: failed, data: { [WIDGET_MIME]: {}, "text/html": RUN_HTML }, trusted: true },
      { node: loading, data: { [WIDGET_MIME]: {}, "text/html": RUN_HTML }, trusted: true },
      { node: foreign, data: { [WIDGET_MIME]: {}, "text/html": "<i>other</i>" }, trusted: true },
    ];
    expect(await showStaticRenditions(outputs, html)).toBe(1);
    expect(failed.querySelector(".pi-run-static").textContent).toBe("a run");
    expect(failed.firstChild.dataset.trusted).toBe("true");
    expect(failed.dataset.piStatic).toBe("shown");
    expect(widgetFailed(failed)).toBe(false);
    expect(loading.textContent).toBe("Loading widget...");
    expect(foreign.textContent).toContain("Error displaying widget");
    // a second pass finds nothing left to do
    expect(await showStaticRenditions(outputs, html)).toBe(0);
  });

  it("passes the output's trust on to the HTML renderer", async () => {
    const node = rendererNode("Error displaying widget: model not found");
    await showStaticRenditions([{ node, data: { [WIDGET_MIME]: {}, "text/html": TREE_HTML }, trusted: false }], html);
    expect(node.firstChild.dataset.trusted).toBe("false");
    expect(node.textContent).toBe("a tree");
  });
});
