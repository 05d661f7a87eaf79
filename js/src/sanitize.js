// @ts-check
// HTML sanitising. Model text and tool output are untrusted: they may carry scripts, event
// handlers, global <style> rules, forms, or remote images that leak data through their URLs.
import { createDOMPurify } from "./vendor.js";

/** @type {import("dompurify").DOMPurify | null} */
let purifier = null;

/** @returns {import("dompurify").DOMPurify} */
function instance() {
  if (purifier === null) {
    const made = createDOMPurify(globalThis.window);
    made.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    purifier = made;
  }
  return purifier;
}

const FORM_TAGS = ["form", "input", "button", "textarea", "select", "option"];

// Markdown rendered from model text: no <style> (it would restyle the whole page), no forms, and
// no remote images (an injected prompt could encode secrets into an image URL). Data-URI images
// stay; a remote image becomes a plain link the user may choose to follow.
/**
 * @param {string} html
 * @returns {string}
 */
export function sanitizeMarkdownHtml(html) {
  const fragment = instance().sanitize(html, {
    FORBID_TAGS: ["style", ...FORM_TAGS],
    FORBID_ATTR: ["style"],
    RETURN_DOM_FRAGMENT: true,
  });
  for (const img of fragment.querySelectorAll("img")) {
    const src = img.getAttribute("src") || "";
    if (!src.startsWith("data:image/")) {
      const link = img.ownerDocument.createElement("a");
      link.textContent = `[image: ${img.getAttribute("alt") || src}]`;
      if (/^https?:/i.test(src)) {
        link.setAttribute("href", src);
        link.setAttribute("target", "_blank");
        link.setAttribute("rel", "noopener noreferrer nofollow");
      }
      img.replaceWith(link);
    }
  }
  const holder = globalThis.document.createElement("div");
  holder.appendChild(fragment);
  return holder.innerHTML;
}

// Rich HTML from a tool (a DataFrame, a plot's HTML): scripts and handlers go, <style> stays,
// because the caller mounts it inside a shadow root where its rules cannot leak.
/**
 * @param {string} html
 * @returns {string}
 */
export function sanitizeRichHtml(html) {
  return instance().sanitize(html, {
    FORBID_TAGS: FORM_TAGS,
    ADD_TAGS: ["style"],
    WHOLE_DOCUMENT: false,
    FORCE_BODY: true,
  });
}

/** @param {unknown} text */
export function escapeHtml(text) {
  return String(text)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}
