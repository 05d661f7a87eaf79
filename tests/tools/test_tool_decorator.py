"""The ``tool`` decorator: schemas from type hints, descriptions from docstrings, injected
``signal``/``on_update``, sync functions in worker threads, return values turned into content."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import enum
import functools
import json
import threading
import time
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from pi_notebook.agent import AgentToolResult, FunctionTool, tool
from pi_notebook.agent.agent import Agent
from pi_notebook.ai import (
    AbortController,
    AbortSignal,
    FauxProvider,
    ImageContent,
    TextContent,
    ToolArgumentsError,
    ToolResultMessage,
    faux_assistant_message,
    faux_tool_call,
    validate_tool_arguments,
)
from pi_notebook.tools.docstrings import ParsedDocstring, parse_docstring
from pi_notebook.tools.output import html_to_text, to_tool_result, truncate_text

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(BaseModel):
    """A point on the page."""

    x: int
    y: int = 0


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


async def run(fn: FunctionTool, params: dict[str, Any], **kwargs: Any) -> AgentToolResult:
    updates: list[AgentToolResult] = kwargs.pop("updates", [])
    return await fn.execute("call_1", params, kwargs.pop("signal", None), updates.append)


def text_of(result: AgentToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def properties(t: FunctionTool) -> dict[str, Any]:
    props: dict[str, Any] = t.parameters["properties"]
    return props


# --- schema from type hints -----------------------------------------------------------------------


def test_schema_for_each_kind_of_hint() -> None:
    @tool
    def draw(
        label: str,
        count: int,
        scale: float,
        visible: bool,
        mode: Literal["fill", "stroke"],
        color: Color,
        at: Point,
        width: Annotated[int, Field(ge=1, le=10, description="Line width.")] = 2,
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
        pair: tuple[int, str] = (0, ""),
    ) -> str:
        return "ok"

    schema = draw.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["label", "count", "scale", "visible", "mode", "color", "at"]
    props = properties(draw)
    assert props["label"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["scale"] == {"type": "number"}
    assert props["visible"] == {"type": "boolean"}
    assert props["mode"] == {"enum": ["fill", "stroke"], "type": "string"}
    assert props["color"] == {"enum": ["red", "green"], "type": "string"}
    assert props["at"] == {
        "description": "A point on the page.",
        "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
        "required": ["x"],
        "type": "object",
    }
    assert props["width"] == {
        "default": 2,
        "description": "Line width.",
        "maximum": 10,
        "minimum": 1,
        "type": "integer",
    }
    assert props["tags"]["anyOf"] == [
        {"items": {"type": "string"}, "type": "array"},
        {"type": "null"},
    ]
    assert props["weights"]["anyOf"][0] == {
        "additionalProperties": {"type": "number"},
        "type": "object",
    }
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    text = json.dumps(schema)
    assert '"title"' not in text and "$ref" not in text and "$defs" not in text


def test_recursive_models_keep_their_definition() -> None:
    @tool
    def plant(tree: Tree) -> int:
        def total(node: Tree) -> int:
            return node.value + sum(total(child) for child in node.children)

        return total(tree)

    schema = plant.parameters
    assert set(schema["$defs"]) == {"Tree"}
    assert properties(plant)["tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    raw = {"tree": {"value": "1", "children": [{"value": 2, "children": [{"value": "3"}]}]}}
    args = validate_tool_arguments(plant, raw)

    async def main() -> AgentToolResult:
        return await run(plant, args)

    assert text_of(asyncio.run(main())) == "6"


def test_no_parameters_and_names_that_clash_with_basemodel() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.parameters == {"type": "object", "properties": {}}

    @tool
    def clash(json: str, copy: int = 1, schema: bool = False, model_config: str = "") -> str:
        return f"{json}/{copy}/{schema}/{model_config}"

    assert list(properties(clash)) == ["json", "copy", "schema", "model_config"]
    assert text_of(asyncio.run(run(clash, {"json": "j", "model_config": "m"}))) == "j/1/False/m"


# --- descriptions from docstrings -----------------------------------------------------------------


def google(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Uses the national service.

    Args:
        city (str): Name of the city,
            spelled in English.
        days: How many days ahead.

    Returns:
        The forecast.
    """
    return city


def numpy_style(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Parameters
    ----------
    city : str
        Name of the city,
        spelled in English.
    days : int, optional
        How many days ahead.

    Returns
    -------
    str
        The forecast.
    """
    return city


def sphinx(city: str, days: int = 3) -> str:
    """Forecast the weather.

    :param str city: Name of the city,
        spelled in English.
    :param days: How many days ahead.
    :type days: int
    :returns: The forecast.
    """
    return city


@pytest.mark.parametrize("fn", [google, numpy_style, sphinx])
def test_docstring_styles(fn: Any) -> None:
    made = tool(fn)
    assert made.description.startswith("Forecast the weather.")
    assert "Returns" not in made.description and ":param" not in made.description
    assert properties(made)["city"]["description"] == "Name of the city, spelled in English."
    assert properties(made)["days"]["description"] == "How many days ahead."


def test_google_description_keeps_the_extended_text() -> None:
    assert tool(google).description == "Forecast the weather.\n\nUses the national service."


def test_explicit_descriptions_win_over_the_docstring() -> None:
    def fn(
        a: Annotated[int, Field(description="from Field")], b: int = Field(2, description="d")
    ) -> int:
        """Summary.

        Args:
            a: from the docstring
            b: from the docstring too
        """
        return a + b

    made = tool(fn, description="Overridden.")
    assert made.description == "Overridden."
    assert properties(made)["a"]["description"] == "from Field"
    assert properties(made)["b"] == {"default": 2, "description": "d", "type": "integer"}


def test_docstring_parser_edge_cases() -> None:
    assert parse_docstring(None).description == ""
    parsed = parse_docstring(
        """Summary.

        Args:
            *items: The items.
            **options: Extra options.

        Note:
            Not a parameter.
        """
    )
    assert parsed.params == {"items": "The items.", "options": "Extra options."}
    numpy = parse_docstring("Sum.\n\nParameters\n----------\nx, y : float\n    Coordinates.\n")
    assert numpy.params == {"x": "Coordinates.", "y": "Coordinates."}


def test_docstring_sections_the_library_lacks_and_prose_after_sphinx_fields() -> None:
    keyword = parse_docstring("Summary.\n\nKeyword Args:\n    k: A keyword.\n")
    assert keyword == ParsedDocstring("Summary.", {"k": "A keyword."})
    noted = parse_docstring("Summary.\n\nNote:\n    Careful.\n\nArgs:\n    a: First.\n")
    assert noted == ParsedDocstring("Summary.", {"a": "First."})
    sphinx_text = parse_docstring("Summary.\n\n:param a: First.\n:param b: Second.\n\nAfter.")
    assert sphinx_text.params == {"a": "First.", "b": "Second."}
    prose = parse_docstring("Summary: a colon.\n\nMore.\n\n    Indented.")
    assert prose == ParsedDocstring("Summary: a colon.\n\nMore.\n\n    Indented.")


# --- options and the forms of the decorator -------------------------------------------------------


def test_forms_options_and_the_original_function() -> None:
    def add(a: int, b: int = 1) -> int:
        return a + b

    plain = tool(add)
    assert isinstance(plain, FunctionTool) and plain.fn is add
    assert (plain.name, plain.label, plain.execution_mode) == ("add", "add", None)
    assert plain(2, 3) == 5  # the tool still calls like the function

    @tool()
    def bare(x: int) -> int:
        return x

    assert bare.name == "bare"

    @tool(name="adder", label="Adder", execution_mode="sequential", requires_approval=True)
    def add2(a: int) -> int:
        return a

    assert (add2.name, add2.label, add2.execution_mode) == ("adder", "Adder", "sequential")
    assert add2.requires_approval is True and plain.requires_approval is False
    dumped = add2.model_dump(by_alias=True)
    assert set(dumped) == {"name", "description", "parameters", "label"}

    def add2_fixed(a: int, b: int = 0) -> int:
        """Fixed."""
        return a + b

    rewrapped = add2.with_function(add2_fixed)
    assert rewrapped.fn is add2_fixed and rewrapped.name == "adder"
    assert rewrapped.requires_approval and rewrapped.description == "Fixed."
    assert list(properties(rewrapped)) == ["a", "b"]
    assert tool(plain).fn is add
    partial = tool(functools.partial(google, days=5), name="forecast")
    assert partial.description.startswith("Forecast the weather.")
    assert properties(partial)["days"]["default"] == 5


def test_bad_usage_is_reported_clearly() -> None:
    with pytest.raises(TypeError, match="needs a function, not int"):
        tool(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="needs a function, not a class: Point"):
        tool(Point)
    with pytest.raises(TypeError, match=r"options as keywords: @tool\(name='x'\)"):
        tool("x")  # type: ignore[call-overload]

    def star(*values: int) -> int:
        return sum(values)

    with pytest.raises(TypeError, match=r"\*values is not supported"):
        tool(star)

    def kwargs(**options: int) -> int:
        return 0

    with pytest.raises(TypeError, match=r"\*\*options is not supported"):
        tool(kwargs)

    def generator() -> Any:
        yield 1

    with pytest.raises(TypeError, match="generator"):
        tool(generator)
    with pytest.raises(ValueError, match="Invalid tool name '<lambda>'"):
        tool(lambda: 1)
    assert tool(lambda: 1, name="one").name == "one"
    with pytest.raises(ValueError, match="execution_mode"):
        tool(execution_mode="later")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="max_output_chars"):
        tool(max_output_chars=0)

    def unresolved(x: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(TypeError, match="cannot resolve the type hints"):
        tool(unresolved)

    class Opaque:
        pass

    def opaque(x: Opaque) -> None:
        return None

    with pytest.raises(TypeError, match="Tool 'opaque'"):
        tool(opaque)


def test_string_annotations_naming_local_classes_resolve() -> None:
    class Local(BaseModel):
        v: int

    @tool
    def use(item: Local) -> int:
        return item.v * 2

    assert properties(use)["item"]["properties"] == {"v": {"type": "integer"}}
    assert text_of(asyncio.run(run(use, {"item": {"v": 4}}))) == "8"


# --- calling --------------------------------------------------------------------------------------


async def test_arguments_are_parsed_into_the_annotated_types() -> None:
    seen: dict[str, Any] = {}

    @tool
    def draw(
        at: Point, color: Color, /, mode: Literal["a", "b"] = "a", tags: set[str] | None = None
    ) -> str:
        seen.update(at=at, color=color, mode=mode, tags=tags)
        return "done"

    result = await run(draw, {"at": {"x": 1}, "color": "green", "tags": ["t"]})
    assert text_of(result) == "done"
    assert seen == {"at": Point(x=1, y=0), "color": Color.GREEN, "mode": "a", "tags": {"t"}}


async def test_arguments_the_model_cannot_parse_raise_in_pi_format() -> None:
    @tool
    def move(at: Point) -> str:
        return "moved"

    with pytest.raises(ToolArgumentsError) as caught:
        await run(move, {"at": {"x": "left"}})
    assert str(caught.value).startswith(
        'Validation failed for tool "move":\n  - at.x: Input should be a valid integer'
    )
    assert str(caught.value).endswith('Received arguments:\n{\n  "at": {\n    "x": "left"\n  }\n}')


async def test_signal_and_on_update_are_injected_not_exposed() -> None:
    received: dict[str, Any] = {}

    @tool
    async def work(steps: int, signal: AbortSignal, on_update: Any) -> str:
        received["signal"] = signal
        for step in range(steps):
            on_update(f"step {step}")
        on_update(AgentToolResult(content=[TextContent(text="custom")], details={"n": 1}))
        on_update({"progress": 1.0})
        return "finished"

    assert list(properties(work)) == ["steps"]
    controller = AbortController()
    updates: list[AgentToolResult] = []
    result = await run(work, {"steps": 2}, signal=controller.signal, updates=updates)
    assert text_of(result) == "finished"
    assert received["signal"] is controller.signal
    assert [text_of(u) for u in updates] == [
        "step 0",
        "step 1",
        "custom",
        '{\n  "progress": 1.0\n}',
    ]
    assert updates[2].details == {"n": 1}

    await run(work, {"steps": 0})  # no signal from the loop: a fresh one, never aborted
    assert isinstance(received["signal"], AbortSignal) and not received["signal"].aborted


async def test_sync_tools_run_in_a_worker_thread_and_the_loop_stays_responsive() -> None:
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}
    update_threads: list[int] = []

    @tool
    def slow(seconds: float, on_update: Any) -> str:
        threads["tool"] = threading.get_ident()
        on_update("started")
        time.sleep(seconds)
        on_update("almost")
        return "slept"

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    def record(update: AgentToolResult) -> None:
        update_threads.append(threading.get_ident())

    ticking = asyncio.create_task(ticker())
    try:
        result = await slow.execute("c", {"seconds": 0.3}, None, record)
    finally:
        ticking.cancel()
    assert text_of(result) == "slept"
    assert threads["tool"] != loop_thread
    assert update_threads == [loop_thread, loop_thread]  # delivered on the loop, before the end
    assert ticks >= 10


async def test_async_tools_run_on_the_loop() -> None:
    loop_thread = threading.get_ident()

    @tool
    async def quick(x: int) -> int:
        await asyncio.sleep(0)
        assert threading.get_ident() == loop_thread
        return x * 2

    assert text_of(await run(quick, {"x": 21})) == "42"

    class Doubler:
        async def __call__(self, x: int) -> int:
            return x * 2

    assert text_of(await run(tool(Doubler(), name="doubler"), {"x": 2})) == "4"

    async def later(x: int) -> int:
        return x + 1

    def returns_coroutine(x: int) -> Any:
        return later(x)

    assert text_of(await run(tool(returns_coroutine), {"x": 1})) == "2"


async def test_exceptions_propagate() -> None:
    @tool
    def broken() -> None:
        raise RuntimeError("disk full")

    @tool
    async def broken_async() -> None:
        raise KeyError("missing")

    with pytest.raises(RuntimeError, match="disk full"):
        await run(broken, {})
    with pytest.raises(KeyError):
        await run(broken_async, {})


async def test_validation_then_execution_like_the_loop_does() -> None:
    @tool
    def repeat(text: str, times: Annotated[int, Field(ge=1)] = 1) -> str:
        return text * times

    raw = {"text": 7, "times": "3"}
    args = validate_tool_arguments(repeat, raw)
    assert args == {"text": "7", "times": 3} and raw == {"text": 7, "times": "3"}
    assert text_of(await run(repeat, args)) == "777"
    with pytest.raises(ToolArgumentsError, match="  - times: expected >= 1"):
        validate_tool_arguments(repeat, {"text": "x", "times": 0})


# --- return values --------------------------------------------------------------------------------


@dataclasses.dataclass
class Reading:
    sensor: str
    value: float


class Markdown:
    def _repr_markdown_(self) -> str:
        return "**bold** table"

    def _repr_html_(self) -> str:
        return "<b>bold</b> table"


class HtmlOnly:
    def _repr_html_(self) -> str:
        return "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2 &amp; 3</td></tr></table>"


class Plot:
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"image/png": PNG_1X1, "text/plain": "<Plot of 3 points>"}


class BrokenRepr:
    def __repr__(self) -> str:
        return "BrokenRepr()"

    def _repr_html_(self) -> str:
        raise ValueError("no html today")

    def _repr_markdown_(self) -> str:
        return "fine markdown"


class Anything:
    """Claims every attribute, like some proxies do."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: "<b>not really</b>"

    def __repr__(self) -> str:
        return "Anything()"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        (None, "(no output)"),
        (42, "42"),
        (2.5, "2.5"),
        ({"é": [1, None, True]}, '{\n  "é": [\n    1,\n    null,\n    true\n  ]\n}'),
        ((1, 2), "[\n  1,\n  2\n]"),
        (Point(x=1), '{\n  "x": 1,\n  "y": 0\n}'),
        (Reading("t1", 20.5), '{\n  "sensor": "t1",\n  "value": 20.5\n}'),
        ({"when": object}, None),  # unknown values fall back to repr inside the JSON
        (b"utf-8 text \xc3\xa9", "utf-8 text é"),
        (b"\x00\xff\xfe", "(binary data, 3 bytes)"),
        (Color.RED, "<Color.RED: 'red'>"),
        (Point, "<class 'tests.tools.test_tool_decorator.Point'>"),
        (Anything(), "Anything()"),
    ],
)
def test_plain_return_values(value: Any, expected: str | None) -> None:
    result = to_tool_result(value)
    assert result.details is None
    if expected is None:
        assert text_of(result).startswith('{\n  "when": "<class')
    else:
        assert text_of(result) == expected


def test_content_blocks_and_results_pass_through() -> None:
    ready = AgentToolResult(content=[TextContent(text="x")], details={"k": 1}, terminate=True)
    assert to_tool_result(ready) is ready
    block = TextContent(text="t")
    assert to_tool_result(block).content == [block]
    image = ImageContent(data="AAAA", mime_type="image/png")
    assert to_tool_result([block, image]).content == [block, image]


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG_1X1, "image/png"),
        (b"\xff\xd8\xff\xe0rest", "image/jpeg"),
        (b"GIF89a...", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
    ],
)
def test_image_bytes_are_sniffed(data: bytes, mime: str) -> None:
    result = to_tool_result(bytearray(data))
    assert result.content == [ImageContent(data=base64.b64encode(data).decode(), mime_type=mime)]


def test_rich_reprs_give_text_for_the_model_and_keep_the_bundle() -> None:
    markdown = to_tool_result(Markdown())
    assert text_of(markdown) == "**bold** table"
    assert markdown.details["mime_bundle"]["text/html"] == "<b>bold</b> table"
    plain = markdown.details["mime_bundle"]["text/plain"]
    assert plain.startswith("<tests.tools.test_tool_decorator")

    html = to_tool_result(HtmlOnly())
    assert text_of(html) == "a | b\n1 | 2 & 3"
    assert set(html.details["mime_bundle"]) == {"text/html", "text/plain"}

    plot = to_tool_result(Plot())
    assert text_of(plot) == "<Plot of 3 points>"
    assert plot.content[1] == ImageContent(
        data=base64.b64encode(PNG_1X1).decode(), mime_type="image/png"
    )
    assert plot.details["mime_bundle"]["image/png"] == base64.b64encode(PNG_1X1).decode()
    json.dumps(plot.details)  # the bundle is JSON-safe: it goes into the session file

    broken = to_tool_result(BrokenRepr())
    assert text_of(broken) == "fine markdown"
    assert "text/html" not in broken.details["mime_bundle"]


def test_html_to_text() -> None:
    html = (
        "<style>p{}</style><h1>Title</h1><p>Some <i>nice</i>\n text</p>"
        "<ul><li>one</li><li>two</li></ul>"
    )
    assert html_to_text(html) == "Title\nSome nice text\none\ntwo"


def test_long_output_is_truncated_with_a_note() -> None:
    text = "".join(f"{i:05d}\n" for i in range(20_000))  # 120,000 characters
    cut = truncate_text(text, 1_000)
    assert cut.startswith(text[:800]) and cut.endswith(text[-200:])
    assert (
        "[... 119000 characters cut: the output had 120000 characters, the limit is 1000 ...]"
        in cut
    )
    assert truncate_text("short", 10) == "short" and truncate_text(text, None) == text
    assert len(text_of(to_tool_result(text))) < 50_200


async def test_tool_max_output_chars_bounds_results_and_updates() -> None:
    @tool(max_output_chars=100)
    def chatty(on_update: Any) -> str:
        on_update("u" * 500)
        return "r" * 500

    updates: list[AgentToolResult] = []
    result = await run(chatty, {}, updates=updates)
    assert "400 characters cut" in text_of(result)
    assert "400 characters cut" in text_of(updates[0])

    @tool(max_output_chars=None)
    def unbounded() -> str:
        return "x" * 60_000

    assert len(text_of(await run(unbounded, {}))) == 60_000


# --- optional libraries ---------------------------------------------------------------------------


def test_pandas_dataframe(monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": range(120), "b": ["x"] * 120})
    result = to_tool_result(frame)
    text = text_of(result)
    assert "[70 more rows not shown; shape 120 × 2]" in text
    assert "49" in text and "\n50 " not in text
    bundle = result.details["mime_bundle"]
    assert "<table" in bundle["text/html"] and bundle["text/plain"] == repr(frame)
    small = text_of(to_tool_result(frame.head(2)["a"]))
    assert "more rows" not in small and "0" in small

    def no_tabulate(*args: Any, **kwargs: Any) -> str:
        raise ImportError("Missing optional dependency 'tabulate'")

    monkeypatch.setattr(pd.DataFrame, "to_markdown", no_tabulate)
    assert text_of(to_tool_result(frame.head(2))) == frame.head(2).to_string()


def test_pil_image() -> None:
    image_module = pytest.importorskip("PIL.Image")
    result = to_tool_result(image_module.new("CMYK", (3, 2)))
    block = result.content[0]
    assert isinstance(block, ImageContent) and block.mime_type == "image/png"
    assert base64.b64decode(block.data).startswith(b"\x89PNG")


def test_matplotlib_figure() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure()
    axes = figure.add_subplot()
    axes.plot([1, 2, 3])
    for value in (figure, axes):
        block = to_tool_result(value).content[0]
        assert isinstance(block, ImageContent) and block.mime_type == "image/png"
        assert base64.b64decode(block.data).startswith(b"\x89PNG")


# --- through the agent loop -----------------------------------------------------------------------


async def test_decorated_tools_in_an_agent_run(faux: FauxProvider) -> None:
    calls: list[tuple[str, int, int]] = []

    @tool
    def repeat(text: str, times: Annotated[int, Field(ge=1)], on_update: Any) -> str:
        """Repeat a text."""
        on_update(f"repeating {times}x")
        calls.append((text, times, threading.get_ident()))
        return text * times

    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("repeat", {"text": 7, "times": "3"}, id="ok"),
                    faux_tool_call("repeat", {"text": "x", "times": 0}, id="bad"),
                ]
            ),
            faux_assistant_message("done"),
        ]
    )
    agent = Agent(model=faux.get_model(), tools=[repeat])
    events: list[Any] = []
    agent.subscribe(events.append)
    await agent.prompt("go")

    assert calls == [("7", 3, calls[0][2])] and calls[0][2] != threading.get_ident()
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("ok", False), ("bad", True)]
    assert text_of(AgentToolResult(content=results[0].content)) == "777"
    assert text_of(AgentToolResult(content=results[1].content)) == (
        'Validation failed for tool "repeat":\n  - times: expected >= 1\n\n'
        'Received arguments:\n{\n  "text": "x",\n  "times": 0\n}'
    )
    starts = [e for e in events if e.type == "tool_execution_start"]
    assert starts[0].args == {"text": 7, "times": "3"}  # events keep the raw arguments
    updates = [e for e in events if e.type == "tool_execution_update"]
    assert [text_of(e.partial_result) for e in updates] == ["repeating 3x"]
