// JupyterLab hands these packages to the extension at run time (shared modules of its federated
// build); their type declarations are not installed here, so the checker sees them untyped.
declare module "@jupyterlab/notebook";
declare module "@jupyterlab/apputils";
declare module "@jupyterlab/cells";
