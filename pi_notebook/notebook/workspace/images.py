"""Images of cell outputs (plots) made ready for the model.

A cell's PNG, JPEG or SVG output reaches the model as image content when the model takes images
(``"image" in model.input``): downscaled to at most ``MAX_SIDE`` pixels a side and
``MAX_BYTES`` bytes (Pillow, when installed), an SVG rasterised first (cairosvg, when installed;
it needs the cairo library). A model without image input gets a short note instead, so it knows
a plot is there: ``[image: 640×480 PNG; this model does not take images]``.

Without Pillow an image is sent as it is when it is small enough, and otherwise replaced by a
note; without cairosvg an SVG is a note. The work runs in the caller's thread: async callers
use :func:`model_images_async`, which runs it in a worker thread, off the kernel's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...ai.types import ImageContent, TextContent
from .history import CellImage, ExecutionRecord

__all__ = [
    "MAX_BYTES",
    "MAX_IMAGES",
    "MAX_SIDE",
    "model_images",
    "model_images_async",
    "prepare_image",
    "record_images",
]

MAX_SIDE = 1024
"""Pixels of an image's longer side as the model gets it."""
MAX_BYTES = 400_000
"""Bytes of one image as the model gets it (before base64)."""
MAX_IMAGES = 3
"""Images of one cell (or one tool result) sent to the model; the rest are counted."""

_NAMES = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WebP",
    "image/svg+xml": "SVG",
}


@dataclass(frozen=True, slots=True)
class _Raster:
    data: bytes
    mime_type: str
    size: tuple[int, int] | None


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    return None


def _rasterise_svg(svg: str) -> bytes | str:
    """PNG bytes of ``svg``, or why it could not be rasterised."""
    try:
        import cairosvg  # type: ignore[import-untyped]  # optional: needs the cairo library
    except (ImportError, OSError):
        return "SVG could not be rasterised here (cairosvg and the cairo library are needed)"
    try:
        png = cairosvg.svg2png(bytestring=svg.encode("utf-8"), unsafe=False)
    except Exception as exc:  # a malformed SVG: the note says so, the run goes on
        return f"SVG could not be rasterised ({type(exc).__name__})"
    return bytes(png)


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


def _shrink(raster: _Raster, image_module: Any) -> _Raster | str:
    """``raster`` within ``MAX_SIDE`` and ``MAX_BYTES`` (Pillow), or why not."""
    try:
        with image_module.open(io.BytesIO(raster.data)) as opened:
            opened.load()
            picture = opened.copy()
    except Exception as exc:
        return f"the image could not be read ({type(exc).__name__})"
    size = (int(picture.width), int(picture.height))
    if max(size) <= MAX_SIDE and len(raster.data) <= MAX_BYTES:
        return _Raster(raster.data, raster.mime_type, size)
    picture.thumbnail((MAX_SIDE, MAX_SIDE))
    for side in (MAX_SIDE, MAX_SIDE // 2, MAX_SIDE // 4):
        picture.thumbnail((side, side))
        out = io.BytesIO()
        if raster.mime_type == "image/jpeg":
            picture.convert("RGB").save(out, "JPEG", quality=85, optimize=True)
            mime = "image/jpeg"
        else:  # a PNG stays one; a GIF or WebP becomes one (its first frame)
            picture.save(out, "PNG", optimize=True)
            mime = "image/png"
        if out.tell() <= MAX_BYTES:
            return _Raster(out.getvalue(), mime, size)
    return f"the image stays over {MAX_BYTES:,} bytes even at {MAX_SIDE // 4} pixels a side"


def prepare_image(image: CellImage) -> tuple[ImageContent | None, str]:
    """The image as the model may get it (None when it cannot be sent) and its description,
    e.g. ``640×480 PNG`` or ``SVG; SVG could not be rasterised here (...)``."""
    name = _NAMES.get(image.mime_type, image.mime_type)
    if image.mime_type == "image/svg+xml":
        png = _rasterise_svg(image.data)
        if isinstance(png, str):
            return None, f"SVG; {png}"
        raster = _Raster(png, "image/png", _png_size(png))
    else:
        try:
            raw = base64.b64decode(image.data, validate=False)
        except (binascii.Error, ValueError):
            return None, f"{name}; its data is not valid base64"
        raster = _Raster(raw, image.mime_type, _png_size(raw))
    image_module = _pillow()
    if image_module is not None:
        shrunk = _shrink(raster, image_module)
        if isinstance(shrunk, str):
            return None, f"{name}; {shrunk}"
        raster = shrunk
    elif len(raster.data) > MAX_BYTES or (raster.size and max(raster.size) > MAX_SIDE):
        return None, f"{name}; too large to send without Pillow to downscale it"
    described = f"{raster.size[0]}×{raster.size[1]} {name}" if raster.size else name
    if name == "SVG":
        described += " rasterised"
    encoded = base64.b64encode(raster.data).decode("ascii")
    content = ImageContent(data=encoded, mime_type=raster.mime_type)
    return content, described


def _size_words(image: CellImage) -> str:
    """What a note says of an image the model will not see: its size when it is cheap to tell."""
    name = _NAMES.get(image.mime_type, image.mime_type)
    if image.mime_type == "image/svg+xml":
        return name
    try:
        head = base64.b64decode(image.data[:64] + "=" * (-len(image.data[:64]) % 4))
    except (binascii.Error, ValueError):
        return name
    size = _png_size(head)
    if size is None and image.mime_type == "image/jpeg":
        image_module = _pillow()
        if image_module is not None:
            try:
                with image_module.open(io.BytesIO(base64.b64decode(image.data))) as opened:
                    size = (int(opened.width), int(opened.height))
            except Exception:
                size = None
    return f"{size[0]}×{size[1]} {name}" if size else name


def model_images(
    images: Sequence[CellImage], takes_images: bool, *, limit: int = MAX_IMAGES
) -> list[TextContent | ImageContent]:
    """Content blocks for ``images`` (at most ``limit`` of them): each image after a short
    caption when the model takes images, else one note per image."""
    blocks: list[TextContent | ImageContent] = []
    for image in images[:limit]:
        if not takes_images:
            note = f"[image: {_size_words(image)}; this model does not take images]"
            blocks.append(TextContent(text=note))
            continue
        content, described = prepare_image(image)
        if content is None:
            blocks.append(TextContent(text=f"[image: {described}; not sent]"))
        else:
            blocks.append(TextContent(text=f"[image: {described}]"))
            blocks.append(content)
    if len(images) > limit:
        blocks.append(TextContent(text=f"[... {len(images) - limit} more images not sent]"))
    return blocks


def record_images(
    records: Sequence[ExecutionRecord], takes_images: bool, *, limit: int = MAX_IMAGES
) -> list[TextContent | ImageContent]:
    """The images of ``records`` for the model, newest cells first within ``limit``, each
    after a caption naming its cell."""
    blocks: list[TextContent | ImageContent] = []
    left = limit
    for record in reversed(records):
        if not record.images or left <= 0:
            continue
        label = f"In[{record.execution_count}]" if record.execution_count is not None else "a cell"
        shown = model_images(record.images, takes_images, limit=left)
        left -= min(len(record.images), left)
        blocks = [TextContent(text=f"Images of {label}:"), *shown, *blocks]
    return blocks


async def model_images_async(
    images: Sequence[CellImage], takes_images: bool, *, limit: int = MAX_IMAGES
) -> list[TextContent | ImageContent]:
    """:func:`model_images` in a worker thread (decoding and scaling take a while)."""
    if not images:
        return []
    return await asyncio.to_thread(model_images, images, takes_images, limit=limit)
