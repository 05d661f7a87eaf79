"""What every pi_notebook widget shares: the anywidget base class with throttled syncs and a
text/HTML fallback (:class:`PiWidget`), the hop of front-end requests onto the kernel's event
loop (:class:`FrontEndChannel`) and owner-set callbacks (:class:`Callback`).

Comm messages may arrive on any thread (JupyterLab sends them over kernel subshells), so the
handlers only hop onto the kernel's event loop with ``loop.call_soon_threadsafe``; callbacks run
there. A callback that fails, or a coroutine it returns that fails, shows a notice in the widget
instead of vanishing into a log.

The widgets' front-end code is synced once per kernel, in a :class:`SharedModule` model; each
view's ``_esm`` is a small loader that imports the code from that model (:func:`module_loader`).
The third-party libraries the views share (Markdown, highlighting, sanitising) are one more such
model, ``vendor``: a view bundle imports them by the specifier ``pi-notebook:vendor``, which the
loader points at the vendor module it imported once per page. A saved notebook then stores each
bundle, and the libraries, once.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast, overload

import anywidget
import ipywidgets  # type: ignore[import-untyped]
import traitlets

from ...ai.producer import describe_error
from .coalesce import Coalescer

__all__ = [
    "STATIC",
    "Callback",
    "FrontEndChannel",
    "PiWidget",
    "SharedModule",
    "module_loader",
    "shared_module",
]

STATIC = Path(__file__).resolve().parents[2] / "static"
"""The built front-end bundles (``npm run build --prefix js``)."""
_log = logging.getLogger(__name__)


# --- the front-end code, once per kernel ------------------------------------------------------


class SharedModule(ipywidgets.Widget):  # type: ignore[misc]
    """A bundle's code and stylesheet as a plain widget model (never displayed): every view of
    that kind imports its code from here, so the notebook's widget state holds it once."""

    esm = traitlets.Unicode("").tag(sync=True)
    css = traitlets.Unicode("").tag(sync=True)
    vendor_id = traitlets.Unicode("").tag(sync=True)
    """The model of the vendor module the code imports, or "" when it imports none."""


_VENDOR = "vendor"
_VENDOR_SPECIFIER = '"pi-notebook:vendor"'


_modules: dict[str, SharedModule] = {}

_LOADER = """\
// Loads the pi_notebook %(name)s code from its shared module model (once per page).
const KEY = "pi-notebook:%(name)s:%(digest)s";
const VENDOR_KEY = "pi-notebook:vendor:%(vendor_digest)s";
const cache = (globalThis.__piNotebookModules ??= new Map());
function blobUrl(code) {
  return URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
}
// The shared libraries, as a URL every view's code imports: made once per page and kept, since
// each view bundle imports it by that URL.
function vendorUrl(manager, id) {
  let found = cache.get(VENDOR_KEY);
  if (!found) {
    found = manager.get_model(id).then((vendor) => blobUrl(vendor.get("esm")));
    found.catch(() => cache.delete(VENDOR_KEY));
    cache.set(VENDOR_KEY, found);
  }
  return found;
}
function load(model) {
  let found = cache.get(KEY);
  if (!found) {
    const manager = model.widget_manager;
    found = manager.get_model(model.get("_module_id")).then(async (shared) => {
      const css = shared.get("css");
      if (css && !document.getElementById(KEY)) {
        const style = document.createElement("style");
        style.id = KEY;
        style.textContent = css;
        document.head.append(style);
      }
      let code = shared.get("esm");
      const vendorId = shared.get("vendor_id");
      if (vendorId) {
        const vendor = await vendorUrl(manager, vendorId);
        code = code.replaceAll(%(specifier)s, JSON.stringify(vendor));
      }
      const url = blobUrl(code);
      try {
        return (await import(url)).default;
      } finally {
        URL.revokeObjectURL(url);
      }
    });
    found.catch(() => cache.delete(KEY));
    cache.set(KEY, found);
  }
  return found;
}
export default {
  async initialize(context) {
    const widget = await load(context.model);
    return widget.initialize?.(context);
  },
  async render(context) {
    const widget = await load(context.model);
    return widget.render(context);
  },
};
"""


def _bundle(name: str) -> tuple[str, str]:
    css = STATIC / f"{name}.css"
    return (
        (STATIC / f"{name}.js").read_text(encoding="utf-8"),
        css.read_text(encoding="utf-8") if css.exists() else "",
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def module_loader(name: str) -> str:
    """The ``_esm`` of a view whose code is the bundle ``static/<name>.js`` (a few hundred
    bytes: it imports the code from the view's ``_module_id`` model)."""
    esm, css = _bundle(name)
    vendor_esm, _ = _bundle(_VENDOR)
    return _LOADER % {
        "name": name,
        "digest": _digest(esm + css + vendor_esm),
        "vendor_digest": _digest(vendor_esm),
        "specifier": json.dumps(_VENDOR_SPECIFIER),
    }


def shared_module(name: str) -> SharedModule:
    """This kernel's model holding the bundle ``name`` (made on first use, again if closed),
    with the vendor module's model when the bundle imports it."""
    module = _modules.get(name)
    if module is None or module.comm is None:
        esm, css = _bundle(name)
        vendor_id = shared_module(_VENDOR).model_id if _VENDOR_SPECIFIER in esm else ""
        module = _modules[name] = SharedModule(esm=esm, css=css, vendor_id=vendor_id)
    return module


# --- front end → kernel ------------------------------------------------------------------------


class FrontEndChannel:
    """Carries a widget's front-end requests onto the kernel's event loop.

    ``receive`` is registered with ``widget.on_msg`` and may run on any thread: it only calls
    ``loop.call_soon_threadsafe(dispatch, content)``. ``call`` runs an owner's callback (on the
    loop); an exception, or a failure of the coroutine it returns, goes to ``report`` in plain
    words. Without a known loop (plain Python, no asyncio) messages are dispatched in place.
    """

    def __init__(
        self,
        dispatch: Callable[[dict[str, Any]], None],
        report: Callable[[str], None],
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._dispatch = dispatch
        self._report = report
        self._loop = loop if loop is not None else _running_loop()
        self._tasks: set[asyncio.Future[Any]] = set()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def bind(self) -> None:
        """Adopt the running loop if none is known yet (call from the loop's thread)."""
        if self._loop is None or self._loop.is_closed():
            self._loop = _running_loop() or self._loop

    def receive(self, _widget: object, content: object, _buffers: object = None) -> None:
        loop = self._loop
        if loop is None:
            self._safe_dispatch(content)
            return
        try:
            loop.call_soon_threadsafe(self._safe_dispatch, content)
        except RuntimeError:  # the loop is closed: the kernel is shutting down
            _log.debug("dropped a widget message: event loop closed")

    def _safe_dispatch(self, content: object) -> None:
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            self._report(f"Ignored a malformed message from the widget: {content!r:.200}")
            return
        try:
            self._dispatch(content)
        except Exception as exc:
            _log.exception("widget message %r failed", content.get("type"))
            self._report(f"Could not handle {content['type']!r}: {describe_error(exc)}")

    def call(
        self,
        label: str,
        callback: Callable[..., object] | None,
        *args: object,
        after: Callable[[], None] | None = None,
    ) -> bool:
        """Run ``callback(*args)``, then ``after()`` once it (or the coroutine it returns) has
        finished, successfully or not. False when there is no callback, it raised at once, or
        it returned ``False`` (it declined)."""
        if callback is None:
            self._report(f"{label}: nothing in the kernel handles this (no callback is set).")
            if after is not None:
                after()
            return False
        try:
            result = callback(*args)
        except Exception as exc:
            _log.exception("%s callback failed", label)
            self._report(f"{label} failed: {describe_error(exc)}")
            if after is not None:
                after()
            return False
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(cast(Awaitable[object], result))
            self._tasks.add(task)
            task.add_done_callback(lambda done: self._finished(label, done, after))
            return True
        if result is False:
            self._report(f"{label}: nothing to do (the run may have ended).")
        if after is not None:
            after()
        return result is not False

    @property
    def pending(self) -> int:
        """Callback coroutines still running."""
        return len(self._tasks)

    def _finished(
        self, label: str, task: asyncio.Future[Any], after: Callable[[], None] | None
    ) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            _log.error("%s callback failed", label, exc_info=exc)
            self._report(f"{label} failed: {describe_error(exc)}")
        if after is not None:
            after()

    async def drain(self) -> None:
        """Wait for callback coroutines still running (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _CallbackOwner(Protocol):
    def _callbacks_changed(self) -> None: ...


_F = TypeVar("_F", bound=Callable[..., object])


class Callback(Generic[_F]):
    """A callback attribute the widget's owner sets; setting it shows its control in the view."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_callback_{name}"

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Callback[_F]: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> _F | None: ...
    def __get__(self, obj: object | None, objtype: type | None = None) -> Callback[_F] | _F | None:
        if obj is None:
            return self
        return cast("_F | None", obj.__dict__.get(self._slot))

    def __set__(self, obj: _CallbackOwner, value: _F | None) -> None:
        if value is not None and not callable(value):
            raise TypeError(f"a callback must be callable or None, got {type(value).__name__}")
        obj.__dict__[self._slot] = value
        obj._callbacks_changed()


class PiWidget(anywidget.AnyWidget):
    """What the run view and the session tree share: throttled syncs (``self._sync``, made by
    the subclass before ``super().__init__``), front-end requests hopped onto the kernel loop,
    :meth:`resync` for executed notebooks, and a text/HTML fallback kept fresh by :meth:`show`.

    Subclasses list their ``content_traits``, call :meth:`_connect` after
    ``super().__init__``, bump ``_version`` when the fallback would change, and implement
    ``_dispatch`` and ``_fallbacks``.
    """

    content_traits: ClassVar[tuple[str, ...]] = ()
    module_name: ClassVar[str] = ""
    """The bundle in ``static/`` with the widget's code (see :func:`shared_module`)."""
    notice = traitlets.Unicode("").tag(sync=True)
    _module_id = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        if self.module_name:
            kwargs.setdefault("_module_id", shared_module(self.module_name).model_id)
        super().__init__(**kwargs)

    _sync: Coalescer
    _version: int = 0

    def _connect(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._display: Any = None
        self._shown_version = -1
        self._unsent = False  # content changed since the last resync
        self.observe(self._note_change, names=list(self.content_traits))
        self._channel = FrontEndChannel(self._dispatch, self._set_notice, loop)
        self.on_msg(self._channel.receive)

    def _handle_msg(self, msg: dict[str, Any]) -> None:
        """Handle every message from the front end on the kernel's event loop: comm handlers
        may run on a subshell thread, and a state request answered there would race the loop's
        trait changes (and move the comm's replies onto that subshell)."""
        channel: FrontEndChannel | None = getattr(self, "_channel", None)
        loop = channel.loop if channel is not None else None
        if loop is None or _running_loop() is loop:
            super()._handle_msg(msg)
            return
        try:
            loop.call_soon_threadsafe(super()._handle_msg, msg)
        except RuntimeError:  # the loop is closed: the kernel is shutting down
            _log.debug("dropped a widget message: event loop closed")

    def resync(self, *, full: bool = False) -> None:
        """Re-send the state, for a ``post_run_cell`` hook: nbclient keeps only messages whose
        parent is the cell it runs, so an executed notebook misses updates made in the
        background. Sends the content traits if any changed since the last resync (``full``:
        every trait, ESM included, always) and refreshes a stale fallback (see :meth:`show`)."""
        self._sync.flush()
        if full or self._unsent:
            self._unsent = False
            self.send_state(None if full else list(self.content_traits))
        self._refresh_fallback()

    def _refresh_fallback(self) -> None:
        """Update the shown text/HTML fallback if it is stale (see :meth:`show`)."""
        if self._display is not None and self._shown_version != self._version:
            self._shown_version = self._version
            self._display.update(self)

    def show(self) -> None:
        """Display with a display id, so :meth:`resync` can refresh the text/HTML fallback
        (what nbconvert without widget state, and GitHub, show)."""
        from IPython.display import display

        self._shown_version = self._version
        self._display = display(self, display_id=True)  # type: ignore[no-untyped-call]

    def flush(self) -> None:
        """Sync pending changes now."""
        self._sync.flush()

    @property
    def sync_count(self) -> int:
        """How many throttled syncs ran."""
        return self._sync.flushes

    def _dispatch(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    def _fallbacks(self) -> tuple[str, str]:
        """The text/plain and text/html renderings."""
        raise NotImplementedError

    def _set_notice(self, text: str) -> None:
        self.notice = text

    def _note_change(self, _change: object) -> None:
        self._unsent = True

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        data["text/plain"], data["text/html"] = self._fallbacks()
        return data, metadata
