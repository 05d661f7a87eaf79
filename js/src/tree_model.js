// @ts-check
// The session tree as the front end holds it: a cache of display rows by index. The kernel keeps
// the tree's shape and folds (pi_notebook/notebook/widgets/tree_pages.py); the synced `page` trait holds
// one bounded page (the top rows and those around the current leaf) and every other row is
// fetched on demand, in aligned blocks, with `rows` requests answered by custom messages.

/**
 * @typedef {import("./contract").DisplayRow} DisplayRow
 * @typedef {import("./contract").RowsRequest} RowsRequest
 */

// Columns of a display row (tree_view.py: TreeView.display_rows).
export const ID = 0;
export const KIND = 1;
export const TITLE = 2;
export const MODEL = 3;
export const TOKENS = 4;
export const COST = 5;
export const FLAG = 6;
export const LABEL = 7;
export const DEPTH = 8;
export const BITS = 9;
export const HIDDEN = 10;

// Bits of BITS (tree_pages.py): under a branch point, its last child, a branch point itself,
// folded, on the current branch.
export const FORK = 1;
export const LAST = 2;
export const BRANCHING = 4;
export const FOLDED = 8;
export const PATH = 16;

// Flags a context edit puts on the message it targets (FLAG column), with their tooltips.
/** @type {Record<string, string | undefined>} */
export const EDIT_FLAGS = { edited: "edited in the context", omitted: "hidden from the context" };

export const BLOCK = 100; // rows per fetch
export const OFFLINE_MS = 4000; // a fetch unanswered this long: the kernel is not there

export class RowCache {
  constructor() {
    this.layout = -1;
    this.total = 0;
    this.entries = 0;
    this.leafIndex = -1;
    this.showMeta = false;
    /** @type {Map<number, DisplayRow>} */
    this.rows = new Map(); // display index -> row
    /** @type {Map<number, number>} */
    this.pending = new Map(); // block -> time asked
    this.answered = false; // a reply came (so the kernel is there)
  }

  // A new page from the kernel: rows of older layouts are dropped.
  /** @param {import("./contract").OrEmpty<import("./contract").TreePage> | null | undefined} page */
  adopt(page) {
    page = page || {};
    const fresh = page.layout !== this.layout;
    this.layout = page.layout ?? -1;
    this.total = page.total || 0;
    this.entries = page.entries || 0;
    this.leafIndex = page.leaf_index ?? -1;
    this.showMeta = Boolean(page.show_meta);
    if (fresh) {
      this.rows.clear();
      this.pending.clear();
    }
    for (const [start, rows] of page.segments || []) this.put(start, rows);
  }

  /**
   * @param {number} start
   * @param {DisplayRow[]} rows
   */
  put(start, rows) {
    for (let i = 0; i < rows.length; i++) this.rows.set(start + i, rows[i]);
  }

  // A `rows` reply; false when it belongs to another layout (it is dropped).
  /** @param {import("./contract").RowsReply} reply */
  accept(reply) {
    this.answered = true;
    if (reply.layout !== this.layout) return false;
    this.put(reply.start, reply.rows || []);
    const block = Math.floor(reply.start / BLOCK);
    this.pending.delete(block);
    return true;
  }

  /** @param {number} index */
  get(index) {
    return this.rows.get(index);
  }

  /**
   * @param {string | null} id
   * @returns {number | undefined}
   */
  indexOf(id) {
    for (const [index, row] of this.rows) if (row[ID] === id) return index;
    return undefined;
  }

  // The requests that fetch the missing rows of [first, last), in aligned blocks, each asked once.
  /**
   * @param {number} first
   * @param {number} last
   * @param {number} [now] epoch milliseconds
   */
  requests(first, last, now = Date.now()) {
    /** @type {RowsRequest[]} */
    const out = [];
    last = Math.min(last, this.total);
    for (let block = Math.floor(Math.max(0, first) / BLOCK); block * BLOCK < last; block++) {
      if (this.pending.has(block)) continue;
      const start = block * BLOCK;
      const end = Math.min(this.total, start + BLOCK);
      let complete = true;
      for (let i = Math.max(start, first); i < Math.min(end, last); i++) {
        if (!this.rows.has(i)) {
          complete = false;
          break;
        }
      }
      if (complete) continue;
      this.pending.set(block, now);
      out.push({ type: "rows", layout: this.layout, start, end });
    }
    return out;
  }

  // Whether a fetch has waited longer than OFFLINE_MS with no reply ever (a saved notebook
  // opened without its kernel).
  offline(now = Date.now()) {
    if (this.answered) return false;
    for (const asked of this.pending.values()) if (now - asked >= OFFLINE_MS) return true;
    return false;
  }

  cachedCount() {
    return this.rows.size;
  }
}
