import { describe, expect, it } from "vitest";
import { showNotice } from "../src/notice.js";

describe("showNotice", () => {
  it("shows the text with a dismiss button, and hides the line when the notice is cleared", () => {
    const el = document.createElement("div");
    const dismissed = [];
    showNotice(el, "Label failed: no such entry", () => dismissed.push(true));
    expect(el.hidden).toBe(false);
    expect(el.querySelector("span").textContent).toBe("Label failed: no such entry");
    el.querySelector("button.pi-dismiss").click();
    expect(dismissed).toEqual([true]);
    showNotice(el, "", () => {});
    expect(el.hidden).toBe(true);
  });
});
