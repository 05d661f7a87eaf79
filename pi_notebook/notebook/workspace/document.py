"""``NotebookDocument``: the notebook open in a frontend, as the kernel's agent reads and writes it.

The kernel cannot see the document by itself: the labextension that ships in the wheel
(``js/src/lab``, built into ``pi_notebook/labextension``) opens a comm to the target
:data:`TARGET` for each notebook view whose kernel has loaded pi_notebook, and answers requests
on it (read the cells, insert, edit, delete, run one). The frontend speaks first: the kernel
never opens a comm itself, so a client without the extension (nbclient, papermill, a plain
JupyterLab) never receives a comm it has no handler for. ``install()`` registers the target and
a *marker*: a comm object kept in the kernel's comm manager but never opened toward a frontend
(no ``comm_open`` is sent), so it shows only in ``comm_info`` replies. The extension asks for
``comm_info`` when it meets a kernel and after each cell it runs there, finds the marker once
``%load_ext pi_notebook`` has run, and opens its link.

Comm callbacks may arrive on a kernel subshell's thread (JupyterLab sends comm messages over a
subshell), so they only hop onto the kernel's event loop; every request is awaited there.
Without a frontend (nbclient, papermill, a terminal IPython) ``connected`` is False and every
request raises :class:`NotebookNotConnected`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from .history import OutputSummary

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .history import ExecutionHistory

__all__ = [
    "REQUEST_TIMEOUT",
    "TARGET",
    "CellType",
    "DocumentCell",
    "DocumentError",
    "FrontendInfo",
    "NotebookDocument",
    "NotebookNotConnected",
]

TARGET = "pi_notebook.workspace"
"""The comm target both halves use (``js/src/lab/protocol.js`` has the same name)."""
REQUEST_TIMEOUT = 30.0
"""Seconds a request waits for the frontend's reply (it answers in milliseconds when alive)."""

CellType = Literal["code", "markdown", "raw"]
_CELL_TYPES: tuple[CellType, ...] = ("code", "markdown", "raw")


class NotebookNotConnected(RuntimeError):
    """No notebook frontend is linked to this kernel (nbclient, papermill, plain IPython, or a
    JupyterLab without the pi_notebook extension)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(
            message
            or "No notebook frontend is connected to this kernel (this happens under nbclient, "
            "papermill or a terminal, or when the pi_notebook JupyterLab extension is missing)."
        )


class DocumentError(RuntimeError):
    """The frontend could not do what was asked (no such cell, not a code cell, ...)."""


Follow = Callable[[str, "str | None", bool], "tuple[str | None, list[str]]"]
"""``follow(path, session_id, hello)`` (see :attr:`NotebookDocument.follow`)."""


@dataclass(frozen=True)
class FrontendInfo:
    """Who answered: the application (``JupyterLab``, ``Jupyter Notebook``), its version and
    the notebook's path relative to the server root."""

    app: str
    version: str
    path: str


@dataclass(frozen=True)
class DocumentCell:
    """One cell of the open notebook, in document order."""

    id: str
    cell_type: CellType
    source: str
    execution_count: int | None
    outputs: tuple[OutputSummary, ...]
    """The cell's outputs as the document shows them, summarised and bounded like the
    history's (a stream's text, an error's ``ename: evalue``, "an image (image/png)")."""
    edited_since_run: bool
    """The kernel ran this cell (by id) with another source than the document holds now."""
    ran_in_kernel: bool
    """This kernel's history has an execution of this cell (by id)."""


def _outputs(raw: Any) -> tuple[OutputSummary, ...]:
    summaries: list[OutputSummary] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        summaries.append(
            OutputSummary(
                kind="stdout" if kind == "stdout" else "stderr" if kind == "stderr" else "display",
                text=str(item.get("text", "")),
            )
        )
    return tuple(summaries)


class _Comm(Protocol):
    """The part of ``comm.base_comm.BaseComm`` used here."""

    comm_id: str

    def send(self, data: Any = None) -> None: ...

    def on_msg(self, callback: Callable[[dict[str, Any]], None] | None) -> None: ...

    def on_close(self, callback: Callable[[dict[str, Any]], None] | None) -> None: ...

    def close(self) -> None: ...


class _Marker:
    """What ``comm_info`` lists while pi_notebook is loaded: an entry in the comm manager
    that is no comm (a real one would send ``comm_close`` when collected). A frontend that
    writes to it is ignored."""

    target_name = TARGET

    def __init__(self) -> None:
        self.comm_id = f"pi-notebook-marker-{uuid.uuid4().hex}"

    def handle_msg(self, _msg: dict[str, Any]) -> None:
        return None

    def handle_close(self, _msg: dict[str, Any]) -> None:
        return None

    def close(self, *_args: Any, **_kwargs: Any) -> None:
        return None


@dataclass
class _Link:
    comm: _Comm
    info: FrontendInfo | None = None
    """Set by the frontend's ``hello``; a link without it is not usable yet."""


class NotebookDocument:
    """The open notebook, through the labextension's comm (the latest view that said hello)."""

    def __init__(
        self,
        history: ExecutionHistory | None = None,
        *,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.history = history
        self.request_timeout = request_timeout
        self._links: list[_Link] = []
        self._pending: dict[int, tuple[_Link, asyncio.Future[Any]]] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._marker: _Marker | None = None
        self._manager: Any = None
        self.follow: Follow | None = None
        """Told the notebook's path and its metadata's session id when a view says hello, and
        the new path when the notebook is renamed or moved; returns the session id the
        notebook should keep in its metadata and what to tell the user."""

    # --- the comm --------------------------------------------------------------------------------

    def install(self, loop: asyncio.AbstractEventLoop | None = None) -> bool:
        """Register the comm target and the marker with the kernel's comm manager (nothing is
        sent); False when there is no kernel (a terminal IPython): the document stays
        disconnected."""
        if self._manager is not None:
            return True
        try:
            from ipykernel.kernelbase import Kernel

            if not Kernel.initialized():
                return False
            import comm
        except ImportError:
            return False
        self._loop = loop or asyncio.get_event_loop()
        manager = comm.get_comm_manager()
        manager.register_target(TARGET, self._on_open_threadsafe)
        self._manager = manager
        # the extension finds it in comm_info and opens its own link
        self._marker = _Marker()
        manager.register_comm(cast(Any, self._marker))  # duck-typed: no comm is sent
        return True

    def uninstall(self) -> None:
        """Close every link (``%unload_ext``)."""
        for link in list(self._links):
            self._drop(link, "pi_notebook was unloaded")
            link.comm.close()
        if self._marker is not None and self._manager is not None:
            # dropped without a comm_close: no frontend ever heard of it
            self._manager.unregister_comm(self._marker)
            self._marker = None
        if self._manager is not None:
            self._manager.unregister_target(TARGET, self._on_open_threadsafe)
            self._manager = None

    def _on_open_threadsafe(self, comm: _Comm, _msg: dict[str, Any]) -> None:
        self._hop(self.attach, comm)

    def _hop(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def attach(self, comm: _Comm) -> None:
        """Take a comm the frontend opened (called on the event loop)."""
        link = _Link(comm)
        self._links.append(link)
        comm.on_msg(lambda msg: self._hop(self._receive, link, msg))
        comm.on_close(lambda _msg: self._hop(self._drop, link, "the notebook view was closed"))

    def _receive(self, link: _Link, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data")
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "hello":
            link.info = FrontendInfo(
                app=str(data.get("app", "")),
                version=str(data.get("version", "")),
                path=str(data.get("path", "")),
            )
            # the newest view is the one the user is looking at
            self._links.remove(link)
            self._links.append(link)
            session_id = data.get("session_id")
            sid = session_id if isinstance(session_id, str) and session_id else None
            self._follow(link, link.info.path, sid, hello=True)
        elif kind == "path" and link.info is not None:
            link.info = dataclasses.replace(link.info, path=str(data.get("path", "")))
            self._follow(link, link.info.path, None, hello=False)
        elif kind == "reply":
            pending = self._pending.pop(data.get("id"), None)  # type: ignore[arg-type]
            if pending is None or pending[1].done():
                return
            if data.get("ok"):
                pending[1].set_result(data.get("result"))
            else:
                pending[1].set_exception(DocumentError(str(data.get("error") or "failed")))

    def _follow(self, link: _Link, path: str, session_id: str | None, *, hello: bool) -> None:
        if self.follow is None:
            return
        try:
            keep, notices = self.follow(path, session_id, hello)
        except Exception:  # the notebook keeps working in the session it has
            _log.exception("following the notebook to %s failed", path)
            return
        if keep is not None:
            link.comm.send({"type": "session", "session_id": keep})
        for text in notices:
            link.comm.send({"type": "notice", "text": f"pi_notebook: {text}"})

    def _drop(self, link: _Link, why: str) -> None:
        if link in self._links:
            self._links.remove(link)
        for request_id, (owner, future) in list(self._pending.items()):
            if owner is link:
                del self._pending[request_id]
                if not future.done():
                    gone = NotebookNotConnected(f"The notebook view went away: {why}.")
                    future.set_exception(gone)

    # --- state -----------------------------------------------------------------------------------

    def _link(self) -> _Link | None:
        return next((link for link in reversed(self._links) if link.info is not None), None)

    @property
    def connected(self) -> bool:
        """A notebook view is linked and has said hello."""
        return self._link() is not None

    @property
    def frontend(self) -> FrontendInfo | None:
        link = self._link()
        return link.info if link is not None else None

    async def _request(self, op: str, **args: Any) -> Any:
        link = self._link()
        if link is None:
            raise NotebookNotConnected()
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (link, future)
        link.comm.send({"type": "request", "id": request_id, "op": op, **args})
        try:
            return await asyncio.wait_for(future, self.request_timeout)
        except TimeoutError:
            raise NotebookNotConnected(
                f"The notebook view did not answer within {self.request_timeout:.0f} s."
            ) from None
        finally:
            self._pending.pop(request_id, None)

    # --- the document ----------------------------------------------------------------------------

    async def cells(self) -> list[DocumentCell]:
        """The notebook's cells in order, markdown included, each compared with what this
        kernel ran under its id."""
        raw = await self._request("cells")
        latest: dict[str, str] = {}
        if self.history is not None:
            for record in self.history.records():
                if record.cell_id is not None:
                    latest[record.cell_id] = record.source
        cells: list[DocumentCell] = []
        for item in raw if isinstance(raw, list) else []:
            cell_id = str(item.get("id", ""))
            kind = item.get("cell_type")
            source = str(item.get("source", ""))
            count = item.get("execution_count")
            ran = cell_id in latest
            cells.append(
                DocumentCell(
                    id=cell_id,
                    cell_type=kind if kind in _CELL_TYPES else "raw",
                    source=source,
                    execution_count=count if isinstance(count, int) else None,
                    outputs=_outputs(item.get("outputs")),
                    edited_since_run=ran and latest[cell_id].rstrip() != source.rstrip(),
                    ran_in_kernel=ran,
                )
            )
        return cells

    async def insert_cell(
        self,
        source: str,
        *,
        after_cell_id: str | None,
        cell_type: CellType = "code",
        cell_id: str | None = None,
    ) -> str:
        """Insert a cell right after ``after_cell_id`` (None: at the end); its id — ``cell_id``
        when given and free, that id with a ``-N`` suffix when the notebook already has it
        (a frontend older than this request field picks its own)."""
        if cell_type not in _CELL_TYPES:
            raise ValueError(f"cell_type must be one of {', '.join(_CELL_TYPES)}")
        fields: dict[str, Any] = {"cell_id": cell_id} if cell_id is not None else {}
        result = await self._request(
            "insert", source=source, after_cell_id=after_cell_id, cell_type=cell_type, **fields
        )
        return str(result["id"])

    async def edit_cell(self, cell_id: str, source: str) -> None:
        """Replace the source of cell ``cell_id``."""
        await self._request("edit", cell_id=cell_id, source=source)

    async def delete_cell(self, cell_id: str) -> None:
        await self._request("delete", cell_id=cell_id)

    async def execute_cell(self, cell_id: str) -> None:
        """Ask the frontend to run cell ``cell_id`` the way Shift+Enter does (an ordinary
        execute_request with the cell's id): returns once it is sent, not when it has run —
        ``history.wait_for`` tells when it has."""
        await self._request("execute", cell_id=cell_id)

    async def cell_outputs(self, cell_id: str) -> list[dict[str, Any]]:
        """The cell's outputs as the document holds them (nbformat JSON), e.g. for its
        images after it ran."""
        result = await self._request("outputs", cell_id=cell_id)
        return [o for o in result if isinstance(o, dict)] if isinstance(result, list) else []
