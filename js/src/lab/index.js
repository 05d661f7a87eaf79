// @ts-check
// pi_notebook's JupyterLab 4 / Notebook 7 extension: it gives the kernel's agent the open
// notebook as its workspace. For each notebook whose kernel has loaded pi_notebook, this side
// opens one comm (target "pi_notebook.workspace") that carries the kernel's requests (read the
// cells, insert, edit, delete, run a cell) and the replies. This side always speaks first: the
// kernel never opens a comm, so clients without this extension (nbclient, papermill) get none
// they cannot handle. At `%load_ext pi_notebook` the kernel keeps a marker among its comms that
// it never opens toward a frontend; this side looks for it with a comm_info request when it
// meets a kernel and after each cell the notebook runs while it is not linked, and opens its
// own comm once the marker is there (every view opens one, so two views never both apply one
// request). The hello names the notebook's path and the session id kept in its metadata, and a
// rename or move is told as it happens: the kernel's session file follows the notebook. It also shows our widgets' static renditions where JupyterLab has no widget model
// for them (a reopened notebook, a restarted kernel: static_outputs.js).
import { INotebookTracker, NotebookActions } from "@jupyterlab/notebook";
import { TARGET, WorkspaceLink } from "./protocol.js";
import { keptSession, notebookAdapter } from "./notebook_adapter.js";
import { watchStaticOutputs } from "./static_outputs.js";

/**
 * @typedef {import("./lab_types").Kernel} Kernel
 * @typedef {import("./lab_types").NotebookPanel} NotebookPanel
 */

/**
 * @param {NotebookPanel} panel
 * @param {import("./lab_types").App} app
 */
function watch(panel, app) {
  /** @type {WeakMap<Kernel, import("./lab_types").Comm>} */
  const links = new WeakMap(); // kernel connection -> its open link comm

  /** @param {Kernel} kernel */
  const open = (kernel) => {
    const existing = links.get(kernel);
    if (existing && !existing.isDisposed) return;
    const comm = kernel.createComm(TARGET);
    links.set(kernel, comm);
    const link = new WorkspaceLink(notebookAdapter(panel), (data) => comm.send(data));
    // the kernel's side (workspace/document.py) sends only KernelMessages on this comm
    comm.onMsg = (msg) => link.handle(/** @type {import("./lab_types").KernelMessage} */ (msg.content.data));
    /**
     * @param {unknown} _context
     * @param {string} path
     */
    const moved = (_context, path) => {
      if (!comm.isDisposed) link.pathChanged(path);
    };
    panel.context.pathChanged.connect(moved);
    comm.onClose = () => {
      links.delete(kernel);
      panel.context.pathChanged.disconnect(moved);
    };
    comm.open({ type: "open" });
    // Tell the kernel when this view goes away, so it stops sending it requests.
    const close = () => {
      if (!comm.isDisposed) comm.close();
    };
    panel.disposed.connect(close);
    window.addEventListener("pagehide", close, { once: true });
    link.hello({
      app: app.name,
      version: app.version,
      path: panel.context.path,
      session_id: keptSession(panel),
    });
  };

  /** @param {Kernel} kernel */
  const openIfLoaded = async (kernel) => {
    const reply = await kernel.requestCommInfo({ target_name: TARGET });
    const content = reply.content;
    if (content.status !== "ok") return;
    const loaded = Object.values(content.comms).some((info) => info.target_name === TARGET);
    if (loaded) open(kernel);
  };

  /** @param {Kernel} kernel */
  const linked = (kernel) => {
    const comm = links.get(kernel);
    return Boolean(comm && !comm.isDisposed);
  };
  /** @param {Kernel} kernel */
  const check = (kernel) => {
    if (kernel.connectionStatus === "connected" && !linked(kernel)) {
      openIfLoaded(kernel).catch(() => undefined);
    }
  };

  const onKernel = () => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel) return;
    kernel.connectionStatusChanged.connect(() => check(kernel));
    check(kernel);
  };
  panel.sessionContext.kernelChanged.connect(onKernel);
  panel.sessionContext.ready.then(onKernel).catch(() => undefined);

  // A cell of this notebook ran (perhaps `%load_ext pi_notebook`, or a kernel restart dropped
  // the link): look for the marker again. Nothing is asked once linked.
  /**
   * @param {unknown} _sender
   * @param {{ notebook: unknown }} args
   */
  const onExecuted = (_sender, { notebook }) => {
    if (notebook !== panel.content) return;
    const kernel = panel.sessionContext.session?.kernel;
    if (kernel) check(kernel);
  };
  NotebookActions.executed.connect(onExecuted);
  panel.disposed.connect(() => NotebookActions.executed.disconnect(onExecuted));
}

const plugin = {
  id: "pi-notebook:workspace",
  description: "Lets the pi_notebook agent read, write and run the cells of the open notebook.",
  autoStart: true,
  requires: [INotebookTracker],
  /**
   * @param {import("./lab_types").App} app
   * @param {import("./lab_types").NotebookTracker} tracker
   */
  activate(app, tracker) {
    /** @param {NotebookPanel} panel */
    const add = (panel) => {
      watch(panel, app);
      watchStaticOutputs(panel);
    };
    tracker.forEach(add);
    tracker.widgetAdded.connect((_tracker, panel) => add(panel));
  },
};

export default plugin;
