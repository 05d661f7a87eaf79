// Extra Rspack options for the JupyterLab extension build (`jupyter-builder build .`).
// Module ids are numbered in module order instead of hashed from absolute paths, so the
// committed build in pi_notebook/labextension is the same from any checkout directory (CI
// rebuilds it in a fresh clone elsewhere and checks it equals the committed files).
module.exports = { optimization: { moduleIds: "natural", chunkIds: "natural" } };
