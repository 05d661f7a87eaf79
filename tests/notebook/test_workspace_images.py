"""Plots the model can see: image outputs kept in the execution history, made ready for the
model (downscaled, bounded, SVG rasterised, or a note for a model without image input), and
sent in a real kernel (nbclient) over real HTTP to an OpenAI-compatible loopback server on
127.0.0.1 that captures the request body: the change summary and ``read_history`` carry a
matplotlib plot as an image, and a text-only model gets the note instead."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai.types import ImageContent, TextContent
from pi_notebook.notebook.workspace import images as images_module
from pi_notebook.notebook.workspace.history import (
    MAX_CELL_IMAGES,
    MAX_IMAGE_RECORDS,
    CellImage,
    ExecutionHistory,
    bundle_image,
)
from pi_notebook.notebook.workspace.images import (
    MAX_BYTES,
    MAX_SIDE,
    model_images,
    prepare_image,
    record_images,
)
from pi_notebook.notebook.workspace.reading_tools import read_tools
from tests.loopback import LoopbackServer, Reply, sse_chunks

from .kernel_notebook import execute, outputs_text
from .test_workspace_edit_tools import shell

__all__ = ["shell"]  # a fixture used here

Image = pytest.importorskip("PIL.Image")

SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200">'
    '<rect width="300" height="200" fill="#36c"/><circle cx="150" cy="100" r="60" fill="red"/>'
    "</svg>"
)


def png(width: int, height: int, *, noise: bool = False, kind: str = "PNG") -> str:
    """A base64 image; ``noise`` makes it compress badly (a large file)."""
    if noise:
        picture = Image.frombytes("RGB", (width, height), bytes(_noise(width * height * 3)))
    else:
        picture = Image.new("RGB", (width, height), (40, 90, 200))
    out = io.BytesIO()
    picture.save(out, kind)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _noise(count: int) -> Iterator[int]:
    value = 12345
    for _ in range(count):
        value = (value * 1103515245 + 12345) & 0x7FFFFFFF
        yield value >> 16 & 0xFF


def decoded(content: ImageContent) -> Any:
    return Image.open(io.BytesIO(base64.b64decode(content.data)))


# --- making images ready for the model -----------------------------------------------------------


def test_a_small_png_is_sent_as_it_is_with_its_size() -> None:
    data = png(640, 480)
    content, described = prepare_image(CellImage("image/png", data))
    assert described == "640×480 PNG"
    assert content is not None and content.mime_type == "image/png"
    assert content.data == data


def test_a_large_image_is_downscaled_within_the_bounds() -> None:
    big = CellImage("image/png", png(3000, 1500, noise=True))
    assert len(base64.b64decode(big.data)) > MAX_BYTES
    content, described = prepare_image(big)
    assert described == "3000×1500 PNG"  # what the plot was
    assert content is not None
    picture = decoded(content)
    assert max(picture.size) <= MAX_SIDE
    assert len(base64.b64decode(content.data)) <= MAX_BYTES
    assert picture.size[0] == 2 * picture.size[1]  # the aspect ratio is kept
    photo = CellImage("image/jpeg", png(2400, 1800, noise=True, kind="JPEG"))
    content, described = prepare_image(photo)
    assert described == "2400×1800 JPEG"
    assert content is not None and content.mime_type == "image/jpeg"
    assert max(decoded(content).size) == MAX_SIDE


def test_an_svg_is_rasterised() -> None:
    pytest.importorskip("cairosvg")
    content, described = prepare_image(CellImage("image/svg+xml", SVG))
    assert described == "300×200 SVG rasterised"
    assert content is not None and content.mime_type == "image/png"
    picture = decoded(content).convert("RGB")
    assert picture.getpixel((150, 100)) == (255, 0, 0)  # the circle's centre
    content, described = prepare_image(CellImage("image/svg+xml", "<svg><unclosed"))
    assert content is None and described.startswith("SVG; SVG could not be rasterised (")


def test_without_pillow_small_images_go_as_they_are_and_large_ones_are_noted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(images_module, "_pillow", lambda: None)
    small = png(200, 100)
    content, described = prepare_image(CellImage("image/png", small))
    assert content is not None and content.data == small and described == "200×100 PNG"
    content, described = prepare_image(CellImage("image/png", png(2000, 900)))
    assert content is None
    assert described == "PNG; too large to send without Pillow to downscale it"


def test_a_model_without_image_input_gets_a_note_per_image() -> None:
    images = [
        CellImage("image/png", png(640, 480)),
        CellImage("image/jpeg", png(80, 60, kind="JPEG")),
    ]
    blocks = model_images(images, takes_images=False)
    assert [b.text for b in blocks if isinstance(b, TextContent)] == [
        "[image: 640×480 PNG; this model does not take images]",
        "[image: 80×60 JPEG; this model does not take images]",
    ]
    assert not any(isinstance(b, ImageContent) for b in blocks)
    blocks = model_images([CellImage("image/svg+xml", SVG)], takes_images=False)
    assert blocks == [TextContent(text="[image: SVG; this model does not take images]")]


def test_images_are_captioned_and_bounded_in_number() -> None:
    images = [CellImage("image/png", png(40 + i, 30)) for i in range(5)]
    blocks = model_images(images, takes_images=True, limit=3)
    captions = [b.text for b in blocks if isinstance(b, TextContent)]
    assert captions == [
        "[image: 40×30 PNG]",
        "[image: 41×30 PNG]",
        "[image: 42×30 PNG]",
        "[... 2 more images not sent]",
    ]
    assert sum(isinstance(b, ImageContent) for b in blocks) == 3
    broken = model_images([CellImage("image/png", "not an image")], takes_images=True)
    assert isinstance(broken[0], TextContent) and broken[0].text.endswith("; not sent]")


# --- the history keeps them ----------------------------------------------------------------------


def test_the_history_keeps_a_cells_images_a_few_per_cell_and_in_the_newest_cells(
    shell: tuple[Any, ExecutionHistory],
) -> None:
    ip, history = shell
    ip.user_ns["DATA"] = png(64, 48)
    ip.run_cell(
        "from IPython.display import Image, SVG, display\n"
        "display(Image(data=__import__('base64').b64decode(DATA)))\n"
        f"display(SVG({SVG!r}))\n"
        "print('plotted')",
        store_history=True,
    )
    record = history.records()[-1]
    assert [i.mime_type for i in record.images] == ["image/png", "image/svg+xml"]
    assert record.images[0].data == ip.user_ns["DATA"]
    assert any("an image (image/png)" in o.text for o in record.outputs)
    ip.run_cell("for _ in range(5): display(Image(data=__import__('base64').b64decode(DATA)))")
    record = history.records()[-1]
    assert len(record.images) == MAX_CELL_IMAGES and record.omitted_images == 5 - MAX_CELL_IMAGES
    for _ in range(MAX_IMAGE_RECORDS):
        ip.run_cell("display(Image(data=__import__('base64').b64decode(DATA)))", store_history=True)
    with_images = [r for r in history.records() if r.images]
    assert len(with_images) == MAX_IMAGE_RECORDS
    assert history.records()[-MAX_IMAGE_RECORDS - 1].omitted_images == 5  # dropped with age
    blocks = record_images(history.records(), takes_images=True, limit=2)
    counts = [r.execution_count for r in history.records()[-2:]]
    assert [b.text for b in blocks if isinstance(b, TextContent)][0::2] == [
        f"Images of In[{counts[0]}]:",
        f"Images of In[{counts[1]}]:",
    ]


def test_a_bundle_image_prefers_png_and_skips_huge_ones() -> None:
    both = {"image/png": "iVBO\nRw0=", "image/svg+xml": SVG, "text/plain": "<Figure>"}
    assert bundle_image(both) == CellImage("image/png", "iVBORw0=")
    assert bundle_image({"image/svg+xml": [SVG[:10], SVG[10:]]}) == CellImage("image/svg+xml", SVG)
    assert bundle_image({"text/plain": "x"}) is None
    assert bundle_image({"image/png": "A" * 8_000_001}) is None


# --- in a real kernel, over real HTTP ------------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "vision",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_reply(text: str) -> Reply:
    return Reply.sse(sse_chunks([chunk({"content": text}), chunk({}, "stop")], done=True))


def tool_reply(name: str, arguments: dict[str, Any]) -> Reply:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return Reply.sse(
        sse_chunks([chunk({"tool_calls": [call]}), chunk({}, "tool_calls")], done=True)
    )


class ThreadedServer:
    """The loopback server on its own loop and thread, so a kernel in another process can call
    it while nbclient runs the notebook in this one."""

    def __init__(self) -> None:
        self.server = LoopbackServer()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.__aenter__(), self.loop).result(10)
        return self.server

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.__aexit__(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


PLOT = """\
%matplotlib inline
import matplotlib.pyplot as plt
plt.plot([1, 3, 2])
plt.title("sales")
plt.show()"""


def model_cell(url: str, image: bool) -> str:
    kinds = '["text", "image"]' if image else '["text"]'
    return (
        "from pi_notebook.ai import custom_model, register_model\n"
        f'register_model(custom_model("vision", "{url}/v1", provider="lab", input={kinds}))'
    )


def parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content or ""}]


def sent_images(message: dict[str, Any]) -> list[str]:
    return [p["image_url"]["url"] for p in parts(message) if p.get("type") == "image_url"]


def sent_text(message: dict[str, Any]) -> str:
    return "\n".join(p.get("text", "") for p in parts(message) if p.get("type") == "text")


def test_a_plot_reaches_the_models_request_in_the_summary_and_read_history(
    tmp_path: Path,
) -> None:
    with ThreadedServer() as server:
        server.add(
            text_reply("A line with a peak."),
            tool_reply("read_history", {"last": 3}),
            text_reply("It goes up, then down."),
        )
        nb = execute(
            [
                "%load_ext pi_notebook",
                model_cell(server.url, image=True),
                "%model lab/vision",
                PLOT,
                "%%agent --wait\nWhat does my plot show?",
                "%%agent --wait\nRead the history and look again.",
            ],
            tmp_path,
            env={"JPY_SESSION_NAME": "test.ipynb", "LAB_API_KEY": "not-a-secret"},
            timeout=120,
        )
        bodies = [r.json() for r in server.requests]
    assert "It goes up, then down." in outputs_text(nb.cells[5])
    assert len(bodies) == 3
    # the change summary: the plot as an image right after its caption
    summary = next(m for m in bodies[0]["messages"] if "[notebook]" in sent_text(m))
    assert re.search(r"Images of In\[\d+\]:\n?\[image: \d+×\d+ PNG\]", sent_text(summary))
    (url,) = sent_images(summary)
    assert url.startswith("data:image/png;base64,")
    plot = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert max(plot.size) <= MAX_SIDE and plot.size[0] > 100
    # read_history's result: Chat Completions carries a tool result's image in a user message
    messages = bodies[2]["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert "plt.title" in tool["content"] and "[image: " in tool["content"]
    after = messages[messages.index(tool) + 1]
    assert after["role"] == "user" and len(sent_images(after)) == 1


def test_a_model_without_image_input_reads_a_note_instead(tmp_path: Path) -> None:
    with ThreadedServer() as server:
        server.add(text_reply("I cannot see it."))
        execute(
            [
                "%load_ext pi_notebook",
                model_cell(server.url, image=False),
                "%model lab/vision",
                PLOT,
                "%%agent --wait\nWhat does my plot show?",
            ],
            tmp_path,
            env={"JPY_SESSION_NAME": "test.ipynb", "LAB_API_KEY": "not-a-secret"},
            timeout=120,
        )
        body = server.requests[0].json()
    summary = next(m for m in body["messages"] if "[notebook]" in sent_text(m))
    assert not sent_images(summary)
    assert re.search(r"\[image: \d+×\d+ PNG; this model does not take images\]", sent_text(summary))


async def test_read_cell_and_read_history_carry_the_plot_or_a_note(
    shell: tuple[Any, ExecutionHistory],
) -> None:
    ip, history = shell
    ip.user_ns["DATA"] = png(320, 240)
    ip.run_cell(
        "from IPython.display import Image, display\n"
        "display(Image(data=__import__('base64').b64decode(DATA)))",
        store_history=True,
    )
    count = history.records()[-1].execution_count
    seeing = read_tools(history, lambda: None, lambda: True)
    result = await seeing["read_cell"].execute("c1", {"cell": str(count)}, None, lambda _: None)
    assert isinstance(result.content[0], TextContent) and "ran" in result.content[0].text
    assert [b.text for b in result.content if isinstance(b, TextContent)][
        1
    ] == "[image: 320×240 PNG]"
    assert [b.data for b in result.content if isinstance(b, ImageContent)] == [ip.user_ns["DATA"]]
    blind = read_tools(history, lambda: None, lambda: False)
    result = await blind["read_history"].execute("c2", {"last": 1}, None, lambda _: None)
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    assert texts[1:] == [
        f"Images of In[{count}]:",
        "[image: 320×240 PNG; this model does not take images]",
    ]
    assert not any(isinstance(b, ImageContent) for b in result.content)
