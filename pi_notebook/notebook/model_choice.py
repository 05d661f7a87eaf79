"""Which model the notebook agent runs: the session's own (the last one set on its branch), else
the environment's or the default (:mod:`.default_model`), and the cassette model calls go through.

A session whose model this kernel lacks is never run silently with another model
(:class:`~.default_model.SessionModelMissing`). Models on a local server (``ollama/…``) and the
embedded local model are only known once something starts: :meth:`ModelChoice.known` gives None
for them and :meth:`ModelChoice.resolve` asks or starts them on the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from .default_model import (
    LOCAL_ALIASES,
    SessionModelMissing,
    local_model_available,
    model_from_api_keys,
    resolve_default_model,
    resolve_model,
    server_model_of,
)

if TYPE_CHECKING:
    from ..agent.types import StreamFn
    from ..ai.cassette import Cassette
    from ..ai.types import Model
    from ..harness import Session

__all__ = ["ModelChoice", "cassette_from_env"]

_CASSETTE_ENV = ("PI_NOTEBOOK_RECORD", "PI_NOTEBOOK_REPLAY")


def cassette_from_env() -> Cassette | None:
    """``Cassette.from_env()``, importing the cassette module (pydantic models) only
    when the environment asks for one."""
    if not any(os.environ.get(name, "").strip() for name in _CASSETTE_ENV):
        return None
    from ..ai.cassette import Cassette

    return Cassette.from_env()


class ModelChoice:
    """The model of a session read by ``open_session`` (None while the session is not open: a
    session only started by ``%load_ext`` holds no entries), and how model calls are streamed."""

    def __init__(
        self,
        open_session: Callable[[], Session | None],
        stream_fn: StreamFn | None = None,
        cassette: Cassette | None = None,
    ) -> None:
        self._open_session = open_session
        self._stream_fn = stream_fn
        self.cassette = cassette
        """Records or replays every model call (``PI_NOTEBOOK_RECORD`` / ``PI_NOTEBOOK_REPLAY``,
        ``%model --record`` / ``--replay``); None talks to the models directly."""

    def stream(self) -> StreamFn | None:
        """The harness's stream function: the one given, through the cassette if any (``None``:
        the provider's own)."""
        if self.cassette is None:
            return self._stream_fn
        return self.cassette.wrap(self._stream_fn)

    def session_ref(self) -> str | None:
        """The session's own model as ``provider/model-id``: the last one set on its branch
        (pi restores the same after a restart); None for a session without one."""
        session = self._open_session()
        if session is None:
            return None
        ref = session.build_context().model
        return None if ref is None else f"{ref.provider}/{ref.model_id}"

    def known(self) -> Model | None:
        """A model known without starting anything: the session's, else the environment's.
        A session whose own model this kernel lacks raises :class:`SessionModelMissing`. None
        when the model is the embedded local one or on a local server: only starting it or
        asking its server gives it (:meth:`resolve`, :meth:`session_server_model`)."""
        from ..ai.models import parse_model
        from ..ai.server_refs import is_server_ref

        own = self.session_ref()
        if own is not None:
            try:
                return parse_model(own)
            except (KeyError, ValueError):
                if is_server_ref(own):
                    return None  # asked of its server when the harness is made
                if own in LOCAL_ALIASES and local_model_available():
                    return None
                raise SessionModelMissing(own) from None
        configured = os.environ.get("PI_NOTEBOOK_MODEL", "").strip()
        if is_server_ref(configured):
            return None  # asked of its server when the harness is made
        if configured and configured not in LOCAL_ALIASES:
            return parse_model(configured)
        return model_from_api_keys()

    async def session_server_model(self) -> Model | None:
        """The session's model when it is one on a local server (``ollama/…``): asked of that
        server, which says its context window. None when the session's model is not one."""
        from ..ai.server_refs import is_server_ref

        own = self.session_ref()
        if own is None or not is_server_ref(own):
            return None
        try:
            return await server_model_of(own)
        except (LookupError, ValueError):
            # never a silent switch to another model: its window may not hold the session
            raise SessionModelMissing(own) from None

    def problem(self) -> str | None:
        """Why a run cannot use the session's own model in this kernel (see
        :class:`SessionModelMissing`); None when it can."""
        try:
            self.known()
        except SessionModelMissing as exc:
            return str(exc)
        except (KeyError, ValueError):  # a bad PI_NOTEBOOK_MODEL: the run reports it
            return None
        return None

    def pending_note(self) -> str | None:
        """What the first run will use when nothing needs configuring: the embedded local model,
        started then. None when another model is known, or the local model is not installed."""
        if not local_model_available():
            return None
        if self.session_ref() in LOCAL_ALIASES:
            return (
                "This session's model is the embedded local model (local/smollm2-135m); it "
                "starts with the next run."
            )
        if self.known() is None:
            return (
                "No model chosen yet: the next run starts the embedded local model (SmolLM2 "
                "135M). Choose another with `%model PROVIDER/MODEL-ID`."
            )
        return None

    async def resolve(self, ref: str | None = None) -> Model:
        """``ref`` (``provider/id`` or ``local``; None = the default model) as a ``Model``. While
        a cassette replays, the embedded local model is the one recorded in it: no server."""
        from ..ai.local import MODEL_ID as LOCAL_MODEL_ID

        cassette = self.cassette
        if cassette is not None and cassette.mode == "replay":
            wanted = ref or os.environ.get("PI_NOTEBOOK_MODEL", "").strip()
            if not wanted and model_from_api_keys() is None:
                wanted = "local"
            if wanted in LOCAL_ALIASES:
                recorded = cassette.recorded_model(f"local/{LOCAL_MODEL_ID}")
                if recorded is not None:
                    return recorded
        return await (resolve_model(ref) if ref else resolve_default_model())

    def resolve_now(self, ref: str) -> Model | None:
        """``ref`` as a ``Model`` when nothing has to start for it (as :meth:`resolve` would give
        it), else None: the embedded local model starts in the background, a local server's
        model is looked up there."""
        from ..ai.local import MODEL_ID as LOCAL_MODEL_ID
        from ..ai.models import parse_model
        from ..ai.server_refs import is_server_ref

        ref = ref.strip()
        if is_server_ref(ref):
            return None  # its server is asked (on the loop) for the model's window
        if ref not in LOCAL_ALIASES:
            return parse_model(ref)
        cassette = self.cassette
        if cassette is not None and cassette.mode == "replay":
            return cassette.recorded_model(f"local/{LOCAL_MODEL_ID}")
        return None

    async def first(self, model: Model | None = None) -> Model:
        """The model a new harness starts with: ``model`` if given, else the session's (asked of
        its server if need be), else the environment's or the default one (the session's own
        embedded local model rather than the default)."""
        if model is not None:
            return model
        own = self.session_ref()
        local = own if own in LOCAL_ALIASES else None  # the session's, not the default
        return await self.session_server_model() or self.known() or await self.resolve(local)
