// @ts-check
// The restore card: what moving to a node of the session tree would restore (variables from the
// checkpoint there, cells to run again, the agent's cell changes to undo), approved or denied as
// one. `renderRestoreCard` is shared by the session tree (its `restore` trait) and the widget
// `%fork TARGET --restore` shows (its `card` trait); both answer with a `restore` message.
import { h } from "./dom.js";
import { showNotice } from "./notice.js";

/**
 * @typedef {import("./contract").RestoreCard} RestoreCard
 * @typedef {import("./contract").RestoreState} RestoreState
 * @typedef {import("./contract").VariableChange} VariableChange
 */

/**
 * Answers a card: allow or deny, and whether to undo the agent's cell changes too.
 * @typedef {(cardId: string, allow: boolean, revertDocument: boolean) => void} DecideRestore
 */

/** @type {Record<VariableChange, string>} */
const CHANGE_TEXT = {
  restored: "restored",
  removed: "removed",
  unrestorable: "could not be restored",
  kept: "left as is",
};
/** @type {VariableChange[]} */
const CHANGE_ORDER = ["restored", "removed", "unrestorable", "kept"];
/** @type {Partial<Record<import("./contract").RestoreCardState, string>>} */
const STATE_TEXT = {
  allowed: "Restoring…",
  denied: "Denied",
  done: "Restored",
  refused: "Not restored",
};

/** @param {import("./contract").RestoreVariable[]} variables */
function variableGroups(variables) {
  /** @type {HTMLElement[]} */
  const groups = [];
  for (const change of CHANGE_ORDER) {
    const items = variables.filter((v) => v.change === change);
    if (!items.length) continue;
    // what stays as it is matters least: folded, so the changes stay in view
    const folded = change === "kept";
    groups.push(
      h(
        folded ? "details" : "div",
        { class: `pi-restore-group pi-restore-${change}` },
        h(folded ? "summary" : "div", { class: "pi-restore-group-head", text: `${CHANGE_TEXT[change]} (${items.length})` }),
        h(
          "ul",
          { class: "pi-restore-list" },
          items.map((v) =>
            h(
              "li",
              { class: "pi-restore-variable", "data-name": v.name, "data-change": v.change },
              h("code", { text: v.name }),
              h("span", { class: "pi-restore-type", text: ` ${v.type}` }),
              v.note ? h("span", { class: "pi-muted", text: ` — ${v.note}` }) : null,
            ),
          ),
        ),
      ),
    );
  }
  return groups;
}

/** @param {import("./contract").RestoreCell[]} cells */
function cellsSection(cells) {
  if (!cells.length) return null;
  return h(
    "div",
    { class: "pi-restore-cells" },
    h("div", { class: "pi-restore-group-head", text: "cells run again to re-create what could not be restored" }),
    cells.map((cell) =>
      h(
        "details",
        { class: "pi-restore-cell", open: true },
        h("summary", { text: `${cell.label} → ${cell.names.join(", ")}` }),
        h("pre", { class: "pi-pre pi-approval-source", "data-language": "python", text: cell.source }),
      ),
    ),
  );
}

/**
 * @param {import("./contract").RestoreDocumentStep[]} steps
 * @param {HTMLInputElement | null} checkbox
 */
function documentSection(steps, checkbox) {
  if (!steps.length) return null;
  return h(
    "div",
    { class: "pi-restore-document" },
    checkbox
      ? h("label", { class: "pi-restore-document-toggle" }, checkbox, ` undo the agent's ${steps.length} cell change${steps.length > 1 ? "s" : ""} on the branch being left`)
      : h("div", { class: "pi-restore-group-head", text: "the agent's cell changes on the branch being left" }),
    h(
      "ul",
      { class: "pi-restore-list" },
      steps.map((step) =>
        h(
          "li",
          { class: `pi-restore-step pi-restore-step-${step.action}`, "data-cell-id": step.cell_id },
          h("span", { text: step.title }),
          step.problem ? h("span", { class: "pi-restore-problem", text: ` — cannot be undone: ${step.problem}` }) : null,
        ),
      ),
    ),
  );
}

// The card for `card` (a RestoreCard); `onDecide(cardId, allow, revertDocument)` answers it.
/**
 * @param {import("./contract").OrEmpty<RestoreCard> | null | undefined} card
 * @param {DecideRestore} onDecide
 */
export function renderRestoreCard(card, onDecide) {
  if (!card || !card.id) return h("div", { class: "pi-restore pi-restore-empty pi-muted", text: "Preparing the restore…" });
  const pending = card.state === "pending";
  const variables = card.variables || [];
  const cells = card.cells || [];
  const steps = card.document || [];
  const undoable = steps.some((step) => !step.problem);
  const checkbox = pending && undoable && (variables.length || cells.length) ? h("input", { type: "checkbox", class: "pi-restore-revert", checked: true }) : null;
  const head = h(
    "div",
    { class: "pi-restore-head" },
    h("span", { class: "pi-restore-title", text: card.title || "Restore" }),
    card.checkpoint ? h("span", { class: "pi-restore-checkpoint pi-muted", text: ` · ${card.checkpoint}` }) : null,
  );
  /** @type {(HTMLElement | null)[]} */
  const parts = [head];
  if (card.refusal) parts.push(h("div", { class: "pi-restore-refusal", text: card.refusal }));
  const listed = [...variableGroups(variables), cellsSection(cells), documentSection(steps, checkbox)];
  if (pending) {
    parts.push(
      ...listed,
      h("div", { class: "pi-restore-question", text: "Nothing changes until you allow it. Deny keeps the variables and the notebook as they are (the conversation has moved already)." }),
      h(
        "div",
        { class: "pi-approval-buttons" },
        h("button", { class: "pi-button pi-allow pi-restore-allow", type: "button", text: "Allow", onclick: () => onDecide(card.id, true, checkbox ? checkbox.checked : true) }),
        h("button", { class: "pi-button pi-deny pi-restore-deny", type: "button", text: "Deny", onclick: () => onDecide(card.id, false, false) }),
      ),
    );
  } else {
    // once decided, the outcome leads and the lists fold away under it
    parts.push(
      h(
        "div",
        { class: `pi-restore-outcome pi-restore-outcome-${card.state}` },
        h("strong", { text: STATE_TEXT[card.state] || card.state }),
        card.result ? h("pre", { class: "pi-pre pi-restore-result", text: card.result }) : null,
      ),
    );
    if (listed.some(Boolean)) parts.push(h("details", { class: "pi-restore-listed" }, h("summary", { text: "what the card listed" }), ...listed));
  }
  return h("div", { class: `pi-restore pi-restore-${card.state}`, "data-card-id": card.id }, ...parts);
}

// The widget of `%fork TARGET --restore`: the card alone.
/** @type {import("@anywidget/types").Render<RestoreState>} */
function render({ model, el }) {
  const noticeEl = h("div", { class: "pi-notice", hidden: true });
  const cardEl = h("div", { class: "pi-restore-slot" });
  el.replaceChildren(h("div", { class: "pi-restore-widget" }, noticeEl, cardEl));
  /** @type {DecideRestore} */
  const decide = (cardId, allow, revertDocument) => model.send({ type: "restore", card_id: cardId, allow, revert_document: revertDocument });
  const draw = () => cardEl.replaceChildren(renderRestoreCard(model.get("card") || {}, decide));
  const notice = () => showNotice(noticeEl, model.get("notice") || "", () => model.send({ type: "dismiss_notice" }));
  model.on("change:card", draw);
  model.on("change:notice", notice);
  draw();
  notice();
  return () => {
    model.off("change:card", draw);
    model.off("change:notice", notice);
  };
}

/** @type {import("@anywidget/types").AnyWidget<RestoreState>} */
export default { render };
