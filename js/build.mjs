// Builds the widget bundles into pi_notebook/static/: one ES module (no CDN, works offline) and
// one stylesheet per widget, plus vendor.js with the third-party libraries they share. A view
// bundle imports the vendor module by the specifier "pi-notebook:vendor", which the kernel-side
// loader (pi_notebook/notebook/widget_base.py) points at the vendor module it loaded once per
// page. The output is deterministic, so CI can check that the committed bundles equal a fresh
// build (`npm run build && git diff --exit-code pi_notebook/static`).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const widgets = ["run_view", "session_tree", "restore_card"];
const VENDOR = "pi-notebook:vendor";

/** @type {import("esbuild").BuildOptions} */
const common = {
  absWorkingDir: here,
  outdir: path.join(here, "..", "pi_notebook", "static"),
  bundle: true,
  format: "esm",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
};

/** @type {import("esbuild").Plugin} */
const vendorExternal = {
  name: "vendor-external",
  setup(build) {
    build.onResolve({ filter: /^\.\/vendor\.js$/ }, () => ({ path: VENDOR, external: true }));
  },
};

await build({ ...common, entryPoints: ["src/vendor.js"] });
await build({
  ...common,
  entryPoints: widgets.flatMap((name) => [`src/${name}.js`, `src/${name}.css`]),
  plugins: [vendorExternal],
});
