// The parts of JupyterLab's objects this extension uses, as it uses them: JupyterLab's own
// declarations are not installed here (jupyterlab.d.ts), so these describe the subset the
// extension relies on (its API in JupyterLab 4), and the workspace channel's messages, whose
// kernel half is pi_notebook/notebook/workspace/document.py. Types only: nothing is bundled.

// --- nbformat --------------------------------------------------------------------------------------

/** Text as nbformat stores it: one string, or lines to join. */
export type MultilineString = string | string[];

export type MimeData = Record<string, MultilineString | unknown>;

export type Output =
  | { output_type: "stream"; name: "stdout" | "stderr"; text: MultilineString }
  | { output_type: "error"; ename: string; evalue: string; traceback: string[] }
  | { output_type: "execute_result"; data: MimeData; metadata: object; execution_count: number | null }
  | { output_type: "display_data"; data: MimeData; metadata: object };

export type CellType = "code" | "markdown" | "raw";

/** A cell's JSON (ICellModel.toJSON()). */
export type CellJSON =
  | { cell_type: "code"; id?: string; source: MultilineString; execution_count: number | null; outputs: Output[] }
  | { cell_type: "markdown" | "raw"; id?: string; source: MultilineString };

// --- JupyterLab (lumino signals, services, notebook) -------------------------------------------------

export interface Signal<Sender, Args> {
  connect(slot: (sender: Sender, args: Args) => void): boolean;
  disconnect(slot: (sender: Sender, args: Args) => void): boolean;
}

export interface Comm {
  readonly isDisposed: boolean;
  open(data: object): unknown;
  send(data: object): unknown;
  close(): unknown;
  onMsg: (msg: { content: { data: unknown } }) => void;
  onClose: (msg: unknown) => void;
}

export interface Kernel {
  readonly connectionStatus: "connected" | "connecting" | "disconnected";
  readonly connectionStatusChanged: Signal<Kernel, string>;
  createComm(targetName: string): Comm;
  requestCommInfo(content: { target_name: string }): Promise<{
    content: { status: "ok"; comms: Record<string, { target_name: string }> } | { status: "error" | "abort" };
  }>;
}

export interface SessionContext {
  readonly session: { readonly kernel: Kernel | null } | null;
  readonly kernelChanged: Signal<SessionContext, unknown>;
  readonly ready: Promise<void>;
}

export interface CellModel {
  readonly id: string;
  readonly sharedModel: { getSource(): string; setSource(source: string): void };
  toJSON(): CellJSON;
}

export interface NotebookModel {
  readonly cells: { readonly length: number; get(index: number): CellModel };
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
  readonly sharedModel: {
    insertCell(index: number, cell: { cell_type: CellType; source: string; metadata: object; id?: string }): { getId(): string };
    deleteCell(index: number): void;
  };
}

/** An output area's model: its outputs' data and trust. */
export interface OutputAreaModel {
  readonly length: number;
  get(index: number): { readonly data: MimeData; readonly trusted: boolean };
}

export interface Widget {
  readonly node: HTMLElement;
}

export interface CellWidget extends Widget {
  readonly model: CellModel;
  /** Code cells only. */
  readonly outputArea?: { readonly model: OutputAreaModel | null; readonly widgets: readonly Widget[] };
}

export interface MimeRenderer extends Widget {
  renderModel(model: { trusted: boolean; data: MimeData; metadata: object; setData(options: object): void }): Promise<void>;
}

export interface NotebookPanel {
  readonly isDisposed: boolean;
  readonly disposed: Signal<NotebookPanel, void>;
  readonly content: {
    readonly model: NotebookModel | null;
    readonly widgets: readonly CellWidget[];
    readonly node: HTMLElement;
    readonly rendermime: { createRenderer(mimeType: string): MimeRenderer };
  };
  readonly context: { readonly path: string; readonly pathChanged: Signal<unknown, string> };
  readonly sessionContext: SessionContext;
}

export interface NotebookTracker {
  forEach(fn: (panel: NotebookPanel) => void): void;
  readonly widgetAdded: Signal<NotebookTracker, NotebookPanel>;
}

export interface App {
  readonly name: string;
  readonly version: string;
}

// --- the workspace channel -------------------------------------------------------------------------

/** A cell as the adapter reads it. */
export interface AdapterCell {
  id: string;
  cell_type: CellType;
  source: string;
  execution_count: number | null;
  outputs: Output[];
}

/** The notebook as WorkspaceLink reaches it; each method throws an Error with a plain-words
 * message when it cannot do what was asked. */
export interface NotebookAdapter {
  keepSession(id: string): void;
  notify(text: string): void;
  cells(): AdapterCell[];
  /** The new cell's id. */
  insert(source: string, afterId: string | null, cellType: CellType, id: string | undefined): string;
  edit(id: string, source: string): void;
  remove(id: string): void;
  outputs(id: string): Output[];
  execute(id: string): Promise<void>;
}

/** Kernel → front end: a request (`op` and its fields), the session to keep, a notice. */
export type KernelMessage =
  | { type: "request"; id: string; op: string; [field: string]: unknown }
  | { type: "session"; session_id: string }
  | { type: "notice"; text: string };

export interface OutputSummary {
  kind: "stdout" | "stderr" | "display";
  text: string;
}

/** Front end → kernel. */
export type LinkMessage =
  | { type: "hello"; protocol: number; app: string; version: string; path: string; session_id: string | null }
  | { type: "path"; path: string }
  | { type: "reply"; id: string; ok: true; result: unknown }
  | { type: "reply"; id: string; ok: false; error: string };
