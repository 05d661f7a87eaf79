// @ts-check
// Markdown → sanitised HTML with highlighted code blocks, and a streaming renderer that only
// re-renders the unfinished tail of a growing text.
import {
  Marked, bash, diff, hljs, javascript, json, markdownLang, python, shell, sql, xml, yaml,
} from "./vendor.js";
import { escapeHtml, sanitizeMarkdownHtml } from "./sanitize.js";

const LANGUAGES = {
  bash, diff, javascript, json, markdown: markdownLang, python, shell, sql, xml, yaml,
};
// Other spellings of the grammars above. TypeScript reads well enough with the JavaScript
// grammar (and keeps the bundle smaller).
/** @type {Record<string, string>} */
const ALIASES = {
  py: "python", ipython: "python", python3: "python",
  sh: "bash", zsh: "bash", console: "bash",
  html: "xml", svg: "xml",
  js: "javascript", mjs: "javascript", jsx: "javascript", ts: "javascript", tsx: "javascript", typescript: "javascript",
  md: "markdown", yml: "yaml", patch: "diff",
};
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

/**
 * @param {string} code
 * @param {string | undefined} lang
 * @returns {{ html: string, language: string }}
 */
export function highlightCode(code, lang) {
  const word = (lang || "").trim().split(/\s+/)[0].toLowerCase();
  const name = ALIASES[word] || word;
  if (name && Object.hasOwn(LANGUAGES, name)) {
    return { html: hljs.highlight(code, { language: name, ignoreIllegals: true }).value, language: name };
  }
  return { html: escapeHtml(code), language: "" };
}

const marked = new Marked({ gfm: true, async: false });
// Passed to each parse as well, so the checker knows it returns a string, not a promise.
/** @type {{ async: false }} */
const SYNC = { async: false };
marked.use({
  renderer: {
    code({ text, lang, codeBlockStyle }) {
      const { html, language } = highlightCode(text, lang);
      const cls = language ? `hljs language-${language}` : "hljs";
      // A fenced block names its language as written (code_actions.js reads it); "" for none.
      const fenced = codeBlockStyle === "indented" ? "" : ` data-lang="${escapeHtml((lang || "").trim().split(/\s+/)[0].toLowerCase())}"`;
      return `<pre class="pi-code"${fenced}><code class="${cls}">${html}</code></pre>\n`;
    },
  },
});

/** @param {string} text */
export function markdownToHtml(text) {
  return sanitizeMarkdownHtml(marked.parse(text || "", SYNC));
}

/**
 * @param {HTMLElement} el
 * @param {string} text
 */
export function renderMarkdownInto(el, text) {
  el.innerHTML = markdownToHtml(text);
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

// Renders a text that only grows. Everything before the last "safe" block boundary (a blank
// line outside a code fence, followed by an unindented line) is rendered once and kept; only
// the text after it is re-rendered on each update, so a whole reply costs O(n) parsing.
// When the finished message arrives, the caller renders it whole once (exact output).
export class MarkdownStream {
  // Set by reset(), called from the constructor.
  /** @type {string} */ text;
  /** @type {HTMLDivElement} */ frozen;
  /** @type {HTMLDivElement} */ tail;
  /** @type {string | null} */ fence;
  /** @type {number} */ committed;
  /** @type {number} */ scanned;
  /** @type {number} */ candidate;
  /** @type {number} */ tailRenders;

  /** @param {HTMLElement} el */
  constructor(el) {
    this.el = el;
    this.el.classList.add("pi-md");
    this.reset();
  }

  reset() {
    this.text = "";
    this.committed = 0; // text[0:committed] is rendered in committed chunks
    this.scanned = 0; // complete lines up to here were scanned
    this.fence = null; // the open fence marker, or null
    this.candidate = -1; // end of a blank line outside a fence, not yet committed
    this.el.replaceChildren();
    this.frozen = globalThis.document.createElement("div");
    this.tail = globalThis.document.createElement("div");
    this.el.append(this.frozen, this.tail);
    this.tailRenders = 0;
  }

  /** @param {string} text */
  update(text) {
    if (!text.startsWith(this.text)) this.reset();
    if (text === this.text && this.tailRenders > 0) return;
    this.text = text;
    this.scan();
    this.renderTail();
  }

  scan() {
    const text = this.text;
    let pos = this.scanned;
    for (;;) {
      const newline = text.indexOf("\n", pos);
      if (newline < 0) break;
      const line = text.slice(pos, newline);
      this.consumeLine(line, pos, newline + 1);
      pos = newline + 1;
    }
    this.scanned = pos;
    // A partial last line may already tell us the previous blank line was a safe boundary.
    if (this.candidate >= 0 && pos < text.length) this.maybeCommit(text.slice(pos));
  }

  /**
   * @param {string} line
   * @param {number} start
   * @param {number} end
   */
  consumeLine(line, start, end) {
    const fence = FENCE.exec(line);
    if (this.fence !== null) {
      if (fence && fence[1][0] === this.fence[0] && fence[1].length >= this.fence.length &&
          line.trim() === fence[1]) {
        this.fence = null;
      }
      return;
    }
    if (this.candidate >= 0 && line.trim() !== "") this.maybeCommit(line);
    if (fence) {
      this.fence = fence[1];
      this.candidate = -1;
    } else if (line.trim() === "" && start > this.committed) {
      this.candidate = end;
    }
  }

  /** @param {string} nextLine */
  maybeCommit(nextLine) {
    if (nextLine.trim() === "") return;
    if (!/^[ \t]/.test(nextLine)) this.commit(this.candidate);
    this.candidate = -1;
  }

  /** @param {number} upTo */
  commit(upTo) {
    if (upTo <= this.committed) return;
    const chunk = globalThis.document.createElement("div");
    chunk.className = "pi-md-chunk";
    chunk.innerHTML = markdownToHtml(this.text.slice(this.committed, upTo));
    this.frozen.append(chunk);
    this.committed = upTo;
  }

  renderTail() {
    this.tail.innerHTML = markdownToHtml(this.text.slice(this.committed));
    this.tailRenders += 1;
  }
}
