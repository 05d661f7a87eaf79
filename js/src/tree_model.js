// The session tree as data: build it from the node table the kernel syncs, fold it, flatten it
// into display rows. Pure functions, O(n) in the number of nodes, no recursion (deep chains).

// Columns of a node row (pi_notebook/notebook/widget_protocol.py: NodeRow). PARENT is the index
// of the parent's row in the table (parents come first), or null for a root.
export const ID = 0;
export const PARENT = 1;
export const KIND = 2;
export const TITLE = 3;
export const MODEL = 4;
export const TOKENS = 5;
export const COST = 6;
export const FLAG = 7;

// Bookkeeping entries hidden unless asked for; their children hang from the nearest shown ancestor.
// pi 1.6 hides its `usage` entries (tokens spent outside the transcript) the same way.
export const META_KINDS = new Set(["label", "session_info", "custom", "active_tools", "usage"]);

// Flags a context edit puts on the message it targets (FLAG column), with their tooltips.
export const EDIT_FLAGS = { edited: "edited in the context", omitted: "hidden from the context" };

export function buildTree(rows, { showMeta = false } = {}) {
  const byId = new Map();
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index];
    const parentRow = row[PARENT] === null || row[PARENT] === undefined ? undefined : rows[row[PARENT]];
    byId.set(row[ID], {
      id: row[ID],
      row,
      index,
      parentId: parentRow === undefined || parentRow === row ? null : parentRow[ID],
      parent: null,
      children: [],
      visible: showMeta || !META_KINDS.has(row[KIND]),
      size: 1, // shown nodes in this subtree, itself included
    });
  }
  const resolved = new Map(); // hidden node id -> its nearest shown ancestor (or null)
  const shownAncestor = (id) => {
    const chain = [];
    let current = id;
    let result = null;
    for (let steps = 0; current !== null && current !== undefined && steps <= byId.size; steps++) {
      if (resolved.has(current)) {
        result = resolved.get(current);
        break;
      }
      const node = byId.get(current);
      if (!node) break;
      if (node.visible) {
        result = node;
        break;
      }
      chain.push(current);
      current = node.parentId;
    }
    for (const hiddenId of chain) resolved.set(hiddenId, result);
    return result;
  };
  const roots = [];
  const order = [];
  for (const node of byId.values()) {
    if (!node.visible) continue;
    const parent = node.parentId === null ? null : shownAncestor(node.parentId);
    node.parent = parent === node ? null : parent;
    if (node.parent) node.parent.children.push(node);
    else roots.push(node);
    order.push(node);
  }
  // Subtree sizes: children come after their parents in file order, so walk it backwards.
  for (let i = order.length - 1; i >= 0; i--) {
    const node = order[i];
    if (node.parent) node.parent.size += node.size;
  }
  return { byId, roots, count: order.length, shownAncestor };
}

// Ids from the leaf up to its root (hidden entries included), and the shown node standing for
// the leaf (the leaf itself, or its nearest shown ancestor when the leaf is hidden).
export function activePath(tree, leafId) {
  const path = new Set();
  let current = leafId;
  for (let steps = 0; current && steps <= tree.byId.size; steps++) {
    const node = tree.byId.get(current);
    if (!node) break;
    path.add(current);
    current = node.parentId;
  }
  const leaf = leafId ? tree.shownAncestor(leafId) : null;
  return { path, leafId: leaf ? leaf.id : null };
}

// Display rows in depth-first order. A node with one child continues at the same depth (long
// linear chains do not drift right); the children of a branch point are indented one level.
// A folded node hides its subtree and reports how many nodes it hides.
export function flatten(tree, folded = new Set()) {
  const out = [];
  const stack = [];
  const rootsBranch = tree.roots.length > 1;
  for (let i = tree.roots.length - 1; i >= 0; i--) {
    stack.push({ node: tree.roots[i], depth: 0, fork: rootsBranch, last: i === tree.roots.length - 1 });
  }
  while (stack.length > 0) {
    const { node, depth, fork, last } = stack.pop();
    const isFolded = node.children.length > 0 && folded.has(node.id);
    out.push({ node, depth, fork, last, branching: node.children.length > 1, folded: isFolded, hidden: isFolded ? node.size - 1 : 0 });
    if (isFolded) continue;
    const children = node.children;
    const branching = children.length > 1;
    for (let i = children.length - 1; i >= 0; i--) {
      stack.push({ node: children[i], depth: branching ? depth + 1 : depth, fork: branching, last: i === children.length - 1 });
    }
  }
  return out;
}

// Unfold every ancestor of `id` so it shows; returns true if something was unfolded.
export function reveal(tree, id, folded) {
  let changed = false;
  let node = tree.byId.get(id);
  node = node && (node.visible ? node : tree.shownAncestor(id));
  for (let current = node && node.parent; current; current = current.parent) {
    if (folded.delete(current.id)) changed = true;
  }
  return changed;
}

// Fold every branch point's side branches that do not contain the active path: a quick way to
// tame a big tree. Returns the new folded set.
export function foldOffPath(tree, path) {
  const folded = new Set();
  for (const node of tree.byId.values()) {
    if (!node.visible || node.children.length < 2) continue;
    for (const child of node.children) {
      if (!path.has(child.id) && child.children.length > 0) folded.add(child.id);
    }
  }
  return folded;
}
