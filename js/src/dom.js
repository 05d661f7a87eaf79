// @ts-check
// Tiny DOM helpers shared by the widgets.

/** @typedef {Node | string | number | null | undefined | false} Child */

/**
 * An element with attributes (`class`, `text`, `on<event>` handlers, the rest as attributes)
 * and children (a nested array is flattened; null, undefined and false are left out).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown>} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = globalThis.document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), /** @type {EventListener} */ (value));
    } else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof globalThis.Node ? child : String(child));
  }
  return el;
}

const integer = new Intl.NumberFormat("en-US");

/**
 * @param {number} value
 * @param {number} digits
 */
function short(value, digits) {
  return value.toFixed(digits).replace(/\.0$/, "");
}

/** @param {number} n */
export function formatTokens(n) {
  if (!Number.isFinite(n)) return "0";
  if (n >= 1_000_000) return `${short(n / 1_000_000, n >= 10_000_000 ? 0 : 1)}M`;
  if (n >= 10_000) return `${short(n / 1000, n >= 100_000 ? 0 : 1)}k`;
  return integer.format(n);
}

/** @param {number} dollars */
export function formatCost(dollars) {
  if (!dollars) return "$0";
  if (dollars < 0.01) return `$${dollars.toFixed(4)}`;
  return `$${dollars.toFixed(dollars < 10 ? 3 : 2)}`;
}

/** @param {number} ms */
export function formatDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}
