// @ts-check
// The third-party libraries every view uses, built as one module of their own
// (pi_notebook/static/vendor.js) that the view bundles import, so a page and a saved notebook
// hold them once rather than once per view.
export { Marked } from "marked";
export { default as hljs } from "highlight.js/lib/core";
export { default as bash } from "highlight.js/lib/languages/bash";
export { default as diff } from "highlight.js/lib/languages/diff";
export { default as javascript } from "highlight.js/lib/languages/javascript";
export { default as json } from "highlight.js/lib/languages/json";
export { default as markdownLang } from "highlight.js/lib/languages/markdown";
export { default as python } from "highlight.js/lib/languages/python";
export { default as shell } from "highlight.js/lib/languages/shell";
export { default as sql } from "highlight.js/lib/languages/sql";
export { default as xml } from "highlight.js/lib/languages/xml";
export { default as yaml } from "highlight.js/lib/languages/yaml";
export { default as createDOMPurify } from "dompurify";
