// Builds the widget bundles into pi_notebook/static/: one self-contained ES module (no CDN, works
// offline) and one stylesheet per widget. The output is deterministic, so CI can check that the
// committed bundles equal a fresh build (`npm run build && git diff --exit-code pi_notebook/static`).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const widgets = ["run_view", "session_tree", "restore_card"];

await build({
  absWorkingDir: here,
  entryPoints: widgets.flatMap((name) => [`src/${name}.js`, `src/${name}.css`]),
  outdir: path.join(here, "..", "pi_notebook", "static"),
  bundle: true,
  format: "esm",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
});
