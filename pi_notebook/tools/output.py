"""Turn whatever a tool function returns into an ``AgentToolResult`` for the model.

``str`` → text; image bytes (PNG/JPEG/GIF/WebP), PIL images and matplotlib figures → image
content (PNG); pandas objects and objects with IPython rich reprs (``_repr_mimebundle_``,
``_repr_markdown_``, ``_repr_html_`` …) → a bounded text rendering for the model, with the rich
bundle kept in ``details["mime_bundle"]`` for display; ``None`` → ``"(no output)"``; an
``AgentToolResult`` passes through; anything else → JSON, or ``repr``. Text for the model is cut to
``max_output_chars`` with a note saying how much was cut.

pandas, PIL and matplotlib are never imported here: a value can only be one of their objects if
its module is loaded already, so they are looked up in ``sys.modules``.
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import io
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import to_json

from ..agent.tool_output import MAX_TOOL_TEXT_CHARS, bound_text
from ..agent.tools import AgentToolResult
from ..ai.types import ImageContent, TextContent

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "NO_OUTPUT",
    "html_to_text",
    "is_cheap_to_convert",
    "mime_bundle",
    "sniff_image_type",
    "to_tool_result",
    "truncate_text",
]

DEFAULT_MAX_OUTPUT_CHARS: Final = MAX_TOOL_TEXT_CHARS
NO_OUTPUT: Final = "(no output)"
DATAFRAME_ROWS: Final = 50
"""Rows of a DataFrame shown to the model; the rest is summarised."""


def to_tool_result(
    value: Any, max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS
) -> AgentToolResult:
    """The result the model sees for a tool function's return value (see the module docstring)."""
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return _text(NO_OUTPUT, None)
    if isinstance(value, str):
        return _text(value, max_output_chars)
    if isinstance(value, TextContent | ImageContent):
        return AgentToolResult(content=[value])
    if _is_content_list(value):
        return AgentToolResult(content=list(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return _from_bytes(bytes(value), max_output_chars)
    for converter in (_pil_image_png, _figure_png):
        png = converter(value)
        if png is not None:
            return AgentToolResult(content=[_image(png, "image/png")])
    frame = _pandas_result(value, max_output_chars)
    if frame is not None:
        return frame
    collected = _collect_bundle(value)
    if collected is not None:
        return _from_bundle(*collected, max_output_chars)
    return _text(_plain_text(value), max_output_chars)


def is_cheap_to_convert(value: Any) -> bool:
    """True for values whose conversion is trivial (no rendering, no serialisation of big data)."""
    return value is None or isinstance(value, str | AgentToolResult | int | float)


def truncate_text(text: str, max_chars: int | None) -> str:
    """``text`` cut to about ``max_chars`` (``None``: not cut) with the core's bound."""
    return text if max_chars is None else bound_text(text, max_chars)


def sniff_image_type(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, from their signature; else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


_REPR_METHODS: Final = (
    ("text/markdown", "_repr_markdown_"),
    ("text/html", "_repr_html_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
)


def mime_bundle(value: Any) -> dict[str, Any] | None:
    """The IPython-style MIME bundle of an object with rich reprs (JSON-safe: binary image data is
    base64 text), or None if it has none. A repr method that raises is skipped."""
    collected = _collect_bundle(value)
    return collected[0] if collected is not None else None


def _collect_bundle(value: Any) -> tuple[dict[str, Any], bool] | None:
    """The bundle, and whether its ``text/plain`` was made on purpose (by ``_repr_mimebundle_`` or
    a custom ``__repr__``) rather than being the default ``<object at 0x…>``."""
    if inspect.isclass(value) or hasattr(value, "_ipython_canary_method_should_not_exist_"):
        return None  # classes, and objects that claim to have every attribute
    bundle: dict[str, Any] = {}
    bundle_method: Any = getattr(value, "_repr_mimebundle_", None)
    if callable(bundle_method):
        data = _call_repr(lambda: bundle_method(include=None, exclude=None))
        if isinstance(data, tuple):
            data = data[0]
        if isinstance(data, dict):
            bundle.update({k: v for k, v in data.items() if isinstance(k, str) and v is not None})
    own_repr: object = type(value).__repr__
    custom_plain = "text/plain" in bundle or own_repr is not object.__repr__
    for mime, name in _REPR_METHODS:
        method: Any = getattr(value, name, None)
        if mime in bundle or not callable(method):
            continue
        data = _call_repr(method)
        if isinstance(data, tuple):
            data = data[0]
        if data is not None:
            bundle[mime] = data
    if not bundle:
        return None
    for mime, data in bundle.items():
        if isinstance(data, bytes | bytearray):
            binary_image = mime.startswith("image/") and mime != "image/svg+xml"
            bundle[mime] = (
                base64.b64encode(data).decode("ascii")
                if binary_image
                else bytes(data).decode("utf-8", "replace")
            )
    bundle.setdefault("text/plain", repr(value))
    return bundle, custom_plain


# --- conversions ---------------------------------------------------------------------------------


def _text(text: str, max_chars: int | None, details: Any = None) -> AgentToolResult:
    content = [TextContent(text=truncate_text(text, max_chars))]
    return AgentToolResult(content=content, details=details)


def _image(data: bytes, mime_type: str) -> ImageContent:
    return ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)


def _is_content_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(block, TextContent | ImageContent) for block in value)
    )


def _from_bytes(data: bytes, max_chars: int | None) -> AgentToolResult:
    mime_type = sniff_image_type(data)
    if mime_type is not None:
        return AgentToolResult(content=[_image(data, mime_type)])
    try:
        return _text(data.decode("utf-8"), max_chars)
    except UnicodeDecodeError:
        return _text(f"(binary data, {len(data)} bytes)", None)


def _loaded(module: str, attribute: str) -> Any:
    """``module.attribute`` if the module is imported already, else None (never imports)."""
    loaded = sys.modules.get(module)
    return getattr(loaded, attribute, None) if loaded is not None else None


def _pil_image_png(value: Any) -> bytes | None:
    image_class = _loaded("PIL.Image", "Image")
    if image_class is None or not isinstance(value, image_class):
        return None
    image: Any = value
    if image.mode not in ("1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"):
        image = image.convert("RGBA")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _figure_png(value: Any) -> bytes | None:
    figure_class = _loaded("matplotlib.figure", "Figure")
    axes_class = _loaded("matplotlib.axes", "Axes")
    if axes_class is not None and isinstance(value, axes_class):
        value = value.figure
    if figure_class is None or not isinstance(value, figure_class):
        return None
    buffer = io.BytesIO()
    value.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _pandas_result(value: Any, max_chars: int | None) -> AgentToolResult | None:
    frame_class = _loaded("pandas", "DataFrame")
    series_class = _loaded("pandas", "Series")
    kinds = tuple(k for k in (frame_class, series_class) if k is not None)
    if not kinds or not isinstance(value, kinds):
        return None
    rows = len(value)
    shown = value.head(DATAFRAME_ROWS) if rows > DATAFRAME_ROWS else value
    try:
        text = shown.to_markdown()
    except ImportError:  # to_markdown needs tabulate
        text = shown.to_string()
    if rows > DATAFRAME_ROWS:
        shape = " × ".join(str(n) for n in value.shape)
        text += f"\n\n[{rows - DATAFRAME_ROWS} more rows not shown; shape {shape}]"
    bundle = {"text/plain": repr(value)}
    html = _call_repr(getattr(value, "_repr_html_", None))
    if isinstance(html, str):
        bundle["text/html"] = html
    return _text(text, max_chars, {"mime_bundle": bundle})


def _from_bundle(
    bundle: dict[str, Any], custom_plain: bool, max_chars: int | None
) -> AgentToolResult:
    text = _bundle_text(bundle, custom_plain)
    content: list[TextContent | ImageContent] = []
    if text:
        content.append(TextContent(text=truncate_text(text, max_chars)))
    for mime in ("image/png", "image/jpeg"):
        data = bundle.get(mime)
        if isinstance(data, str):
            content.append(ImageContent(data=data, mime_type=mime))
    if not content:
        content.append(TextContent(text=truncate_text(bundle["text/plain"], max_chars)))
    return AgentToolResult(content=content, details={"mime_bundle": bundle})


def _bundle_text(bundle: dict[str, Any], custom_plain: bool) -> str | None:
    """The most readable text in a bundle: Markdown, a purpose-made plain text, HTML as text, LaTeX,
    JSON; a default ``<object at 0x…>`` repr only when there is nothing else (not even an image)."""
    markdown = bundle.get("text/markdown")
    if isinstance(markdown, str):
        return markdown
    if custom_plain:
        return str(bundle["text/plain"])
    html = bundle.get("text/html")
    if isinstance(html, str):
        return html_to_text(html)
    latex = bundle.get("text/latex")
    if isinstance(latex, str):
        return latex
    if "application/json" in bundle:
        return _json_text(bundle["application/json"])
    if any(mime.startswith("image/") for mime in bundle):
        return None
    return str(bundle["text/plain"])


def _call_repr(method: Callable[[], Any] | None) -> Any:
    if method is None:
        return None
    try:
        return method()
    except Exception:  # a broken repr must not fail the tool; IPython skips it too
        return None


def _plain_text(value: Any) -> str:
    jsonable = isinstance(value, dict | list | tuple | set | frozenset | int | float | BaseModel)
    if jsonable or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return _json_text(value)
    return repr(value)


def _json_text(value: Any) -> str:
    try:
        return to_json(value, indent=2, fallback=repr).decode("utf-8")
    except (ValueError, TypeError):
        return repr(value)


# --- HTML to text --------------------------------------------------------------------------------

_BLOCKS: Final = frozenset(
    {"p", "div", "br", "tr", "table", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6"}
    | {"pre", "blockquote", "thead", "tbody", "section", "article", "header", "footer", "hr"}
)
_CELLS: Final = frozenset({"td", "th"})
_SKIPPED: Final = frozenset({"script", "style", "head", "title"})


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[list[str]] = [[]]
        self.skip = 0
        self.cell_open = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skip += 1
        elif tag in _BLOCKS:
            self.lines.append([])
        elif tag in _CELLS:
            if self.cell_open or self.lines[-1]:
                self.lines[-1].append(" | ")
            self.cell_open = True

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCKS:
            self.lines.append([])
            self.cell_open = False

    def handle_data(self, data: str) -> None:
        if not self.skip:
            words = " ".join(data.split())
            if words:
                self.lines[-1].append(words)


def html_to_text(html: str) -> str:
    """A readable plain-text rendering of HTML: blocks on their own lines, table cells joined by
    `` | ``, scripts and styles dropped, entities decoded."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = ("".join(_space_words(parts)).strip() for parts in parser.lines)
    return "\n".join(line for line in lines if line)


def _space_words(parts: list[str]) -> list[str]:
    spaced: list[str] = []
    for part in parts:
        if spaced and part != " | " and spaced[-1] != " | ":
            spaced.append(" ")
        spaced.append(part)
    return spaced
