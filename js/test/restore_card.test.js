import { afterEach, describe, expect, it } from "vitest";
import widget, { renderRestoreCard } from "../src/restore_card.js";
import { FakeModel } from "./fake_model.js";

// A card as the kernel sends it (RestoreCard in widgets/protocol.py).
const CARD = {
  id: "restore-3",
  target_id: "e1",
  title: "Restore to “fit the model”",
  checkpoint: "checkpoint #4 at entry e1",
  refusal: "",
  variables: [
    { name: "df", change: "restored", type: "DataFrame", note: "1.2 MB" },
    { name: "extra", change: "removed", type: "int", note: "did not exist there" },
    { name: "handle", change: "unrestorable", type: "TextIOWrapper", note: "cannot be pickled" },
    { name: "n", change: "kept", type: "int", note: "" },
  ],
  cells: [{ label: "In [3]", source: "handle = open('data.csv')", names: ["handle"] }],
  document: [
    { action: "delete", cell_id: "agent-c1", title: "Delete the inserted cell agent-c1 ('x = 1')", source: "x = 1", problem: "" },
    { action: "unedit", cell_id: "c2", title: "Restore the source of the edited cell c2 ('y')", source: "y", problem: "" },
  ],
  state: "pending",
  result: "",
};

const cleanups = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()();
});

describe("restore card", () => {
  it("lists what changes, grouped, the cells to run again and the cell changes to undo", () => {
    const el = renderRestoreCard(CARD, () => {});
    const names = (change) => [...el.querySelectorAll(`.pi-restore-variable[data-change="${change}"] code`)].map((c) => c.textContent);
    expect(names("restored")).toEqual(["df"]);
    expect(names("removed")).toEqual(["extra"]);
    expect(names("unrestorable")).toEqual(["handle"]);
    expect(names("kept")).toEqual(["n"]);
    const heads = [...el.querySelectorAll(".pi-restore-group-head")].map((e) => e.textContent);
    expect(heads.slice(0, 4)).toEqual(["restored (1)", "removed (1)", "could not be restored (1)", "left as is (1)"]);
    expect(el.querySelector(".pi-restore-cell summary").textContent).toBe("In [3] → handle");
    expect(el.querySelector(".pi-restore-cell pre").textContent).toBe("handle = open('data.csv')");
    expect([...el.querySelectorAll(".pi-restore-step")].map((s) => s.dataset.cellId)).toEqual(["agent-c1", "c2"]);
    expect(el.querySelector(".pi-restore-document-toggle").textContent).toContain("undo the agent's 2 cell changes");
  });

  it("answers Allow with the document choice, and Deny", () => {
    const answers = [];
    const el = renderRestoreCard(CARD, (...args) => answers.push(args));
    el.querySelector(".pi-restore-revert").checked = false;
    el.querySelector(".pi-restore-allow").click();
    el.querySelector(".pi-restore-deny").click();
    expect(answers).toEqual([["restore-3", true, false], ["restore-3", false, false]]);
  });

  it("shows a refusal, and once decided the outcome instead of the buttons", () => {
    const refused = { ...CARD, refusal: "The checkpoint at e1 is damaged (object missing).", variables: [], cells: [] };
    const el = renderRestoreCard(refused, () => {});
    expect(el.querySelector(".pi-restore-refusal").textContent).toContain("damaged");
    expect(el.querySelector(".pi-restore-revert")).toBeNull(); // only the document part: Allow is the choice
    const done = renderRestoreCard({ ...CARD, state: "done", result: "Variables restored: df." }, () => {});
    expect(done.querySelector(".pi-restore-allow")).toBeNull();
    expect(done.querySelector(".pi-restore-outcome").textContent).toContain("Restored");
    expect(done.querySelector(".pi-restore-result").textContent).toBe("Variables restored: df.");
    expect(renderRestoreCard({}, () => {}).textContent).toContain("Preparing");
  });

  it("the %fork widget renders its card trait and sends the answer", () => {
    const model = new FakeModel({ card: {}, notice: "" });
    const el = document.createElement("div");
    cleanups.push(widget.render({ model, el }));
    expect(el.textContent).toContain("Preparing");
    model.set("card", CARD);
    el.querySelector(".pi-restore-allow").click();
    expect(model.sent).toEqual([{ type: "restore", card_id: "restore-3", allow: true, revert_document: true }]);
    model.set("notice", "That restore card was already answered.");
    expect(el.querySelector(".pi-notice").hidden).toBe(false);
  });
});

describe("restore card layout", () => {
  it("folds what stays as it is, and once decided folds the lists under the outcome", () => {
    const pending = renderRestoreCard(CARD, () => {});
    const kept = pending.querySelector(".pi-restore-kept");
    expect(kept.tagName).toBe("DETAILS");
    expect(kept.open).toBe(false);
    const done = renderRestoreCard({ ...CARD, state: "done", result: "ok" }, () => {});
    const children = [...done.children].map((el) => el.className);
    expect(children).toEqual(["pi-restore-head", "pi-restore-outcome pi-restore-outcome-done", "pi-restore-listed"]);
    expect(done.querySelector(".pi-restore-listed").open).toBe(false);
    expect(done.querySelectorAll(".pi-restore-variable").length).toBe(4);
  });
});
