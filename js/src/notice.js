// @ts-check
// The dismissable notice line both widgets show above their content (the `notice` trait): the
// text, and a × button that asks the kernel to clear it. One module so the two views look and
// behave alike.
import { h } from "./dom.js";

/**
 * @param {HTMLElement} el
 * @param {string} notice
 * @param {() => void} dismiss
 */
export function showNotice(el, notice, dismiss) {
  el.hidden = !notice;
  if (notice) {
    el.replaceChildren(
      h("span", { text: notice }),
      h("button", { class: "pi-button pi-dismiss", type: "button", text: "×", title: "dismiss", onclick: dismiss }),
    );
  }
}
