// @ts-check
// "Insert as cell" and "Apply as edit" under the code blocks of finished replies: for a model
// that answers with code instead of calling a tool. Only fenced blocks of code the kernel runs
// (python or no language named) get them, and only as the kernel's `controls` offer them (a
// notebook frontend is connected; a cell the run is about, for the edit). The kernel checks
// that the code is a block of that reply before it acts (run_view.RunView._code_action).
import { h } from "./dom.js";

// The same list as pi_notebook/notebook/workspace/code_actions.py's RUNNABLE_LANGUAGES.
export const RUNNABLE_LANGUAGES = new Set(["", "python", "py", "python3", "ipython", "ipython3"]);

/** @typedef {import("./contract").RunControls} RunControls */
/** @typedef {(message: import("./contract").CodeActionRequest) => void} SendAction */

/**
 * @param {HTMLElement} pre
 * @param {Partial<RunControls>} controls
 * @param {SendAction} send
 */
function actionBar(pre, controls, send) {
  const reply = /** @type {HTMLElement | null} */ (pre.closest("[data-item-id]"));
  const code = pre.querySelector("code");
  const source = (code ? code.textContent : pre.textContent) ?? "";
  /**
   * @param {"insert" | "edit"} action
   * @param {string} text
   * @param {string} title
   */
  const button = (action, text, title) => {
    const el = h("button", { class: `pi-button pi-code-${action}`, type: "button", text, title });
    el.addEventListener("click", () => {
      el.disabled = true; // one click, one change: the result shows as a card below
      send({ type: "code_action", action, item_id: (reply && reply.dataset.itemId) || "", source });
    });
    return el;
  };
  const buttons = [];
  if (controls.insert_code) buttons.push(button("insert", "Insert as cell", "Insert this code as a new cell below the run's cell"));
  if (controls.edit_code) buttons.push(button("edit", "Apply as edit", `Propose this code as the new source of ${controls.edit_code} (you see the diff and allow it first)`));
  return h("div", { class: "pi-code-actions" }, ...buttons);
}

// Adds, updates or removes the buttons under every fenced block of the finished replies in
// `root`, as `controls` offer them now. Safe to call again: a block whose buttons are up to
// date is left alone.
/**
 * @param {HTMLElement} root
 * @param {Partial<RunControls>} controls
 * @param {SendAction} send
 */
export function decorateCodeBlocks(root, controls, send) {
  const key = `${Boolean(controls.insert_code)}|${controls.edit_code || ""}`;
  const offered = Boolean(controls.insert_code || controls.edit_code);
  const blocks = /** @type {NodeListOf<HTMLPreElement>} */ (root.querySelectorAll(".pi-assistant:not(.pi-streaming) pre.pi-code[data-lang]"));
  for (const pre of blocks) {
    const next = /** @type {HTMLElement | null} */ (pre.nextElementSibling);
    const bar = next && next.classList.contains("pi-code-actions") ? next : null;
    const lang = pre.dataset.lang;
    if (!offered || lang === undefined || !RUNNABLE_LANGUAGES.has(lang)) {
      if (bar) bar.remove();
      continue;
    }
    if (bar && bar.dataset.key === key) continue;
    const fresh = actionBar(pre, controls, send);
    fresh.dataset.key = key;
    if (bar) bar.replaceWith(fresh);
    else pre.after(fresh);
  }
}
