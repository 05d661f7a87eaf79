"""A run that called tools and ends without its answer stated gets one follow-up asking for it;
a run that states numbers without running any code gets one asking to compute them. Unit tests
of the format and the checks, then real kernels (nbclient) with scripted models, and a task
through the evaluation harness against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_notebook.ai import custom_model, faux_assistant_message
from pi_notebook.ai.types import TextContent, ToolResultMessage, UserMessage
from pi_notebook.eval import ModelSpec, run_task
from pi_notebook.harness import CustomMessage
from pi_notebook.notebook.answer_check import (
    answer_format,
    code_tool_among,
    failed_code_text,
    follow_up_text,
    lacks_answer,
    refers_to_data,
    shown_texts,
    states_numbers,
    unchecked_numbers_text,
    unsupported_numbers,
    unsupported_numbers_text,
)
from tests.eval.test_baselines import rows_task, serving
from tests.loopback import Reply, sse_chunks

from .kernel_notebook import execute, outputs_text

ASKED = (
    "What is the mean price?\n\nEnd your reply with the answer in exactly this format, "
    "one per line:\n@mean_price[value] @count[number]"
)


def test_the_format_is_read_from_the_prompt() -> None:
    assert answer_format(ASKED) == "@mean_price[value] @count[number]"
    assert answer_format("Sum the sales. Answer in the format: Total: <number>") == (
        "Total: <number>"
    )
    assert answer_format("Plot the sales by city.") is None


def test_an_answer_lacks_the_format_when_a_literal_part_is_missing() -> None:
    form = "@mean_price[value] @count[number]"
    assert lacks_answer("", None) and lacks_answer("  \n", form)
    assert not lacks_answer("The mean is 3.", None)
    assert lacks_answer("The mean is 3.2 over 10 rows.", form)
    assert lacks_answer("@mean_price[3.2]", form)
    assert not lacks_answer("Done.\n@mean_price[3.2]\n@count[10]", form)
    assert not lacks_answer("Total: 12", "Total: <number>")
    # a placeholder copied where the value goes, or the whole format echoed
    assert lacks_answer("@cars[count]", "@cars[count]")
    assert lacks_answer("Answer: @mean_price[value] @count[10]", form)
    assert not lacks_answer("@cars[406]", "@cars[count]")


def test_the_follow_up_repeats_the_format() -> None:
    assert follow_up_text(None).startswith("State your final answer now")
    assert follow_up_text("Total: <number>").endswith(
        "in exactly this format, with <number> replaced by your value:\nTotal: <number>"
    )
    # square brackets stay: only the word inside them is the placeholder
    assert follow_up_text("@species[name] @mean[value]").endswith(
        "keeping the square brackets, with name and value inside them replaced by your values:"
        "\n@species[name] @mean[value]"
    )
    assert follow_up_text("@malignant[count]").endswith(
        "with count inside them replaced by your value:\n@malignant[count]"
    )
    assert follow_up_text("Mean: [value] ± <error>").endswith(
        "with [value] and <error> replaced by your values:\nMean: [value] ± <error>"
    )
    assert follow_up_text("Answer: yes or no").endswith("this format:\nAnswer: yes or no")


def test_the_numbers_check_asks_for_the_offered_code_tool() -> None:
    assert states_numbers("@rows[10]") and states_numbers("The mean is 26.38.")
    assert not states_numbers("I cannot tell.") and not states_numbers("alpha000, alpha001")
    assert code_tool_among({"list_cells", "insert_cell", "run_python"}) == "insert_cell"
    assert code_tool_among({"list_variables", "run_python"}) == "run_python"
    assert code_tool_among({"list_variables", "read_last_error"}) is None
    assert "Call insert_cell with run set to true now" in unchecked_numbers_text("insert_cell")
    assert "Call run_python now" in unchecked_numbers_text("run_python")


def test_the_numbers_check_needs_a_prompt_about_data_the_kernel_has(tmp_path: Path) -> None:
    (tmp_path / "cars.csv").write_text("name\nvw\n")
    about_file = "How many cars are there? The data is in cars.csv."
    assert refers_to_data(about_file, {}, tmp_path)
    assert not refers_to_data("How many cars are in other.csv?", {}, tmp_path)  # no such file

    class Table:
        shape = (3, 2)

    assert refers_to_data("What is the mean price in orders?", {"orders": Table()}, tmp_path)
    assert not refers_to_data("What is the capital of France?", {"France": "Paris"}, tmp_path)
    assert not refers_to_data("Write a long list.", {}, tmp_path)

    class Odd:
        @property
        def shape(self) -> tuple[int, int]:
            raise RuntimeError("not today")

    assert not refers_to_data("Look at odd.", {"odd": Odd()}, tmp_path)  # no error either


def test_numbers_the_model_was_not_shown_are_found_allowing_for_rounding() -> None:
    shown = ["Origin\nEurope    27.891\nJapan     30.4506\n", "(150, 5)", "0.3726\n1.2e-05"]
    shown.append("Round to 2 decimals. Years 1980 and later.")
    assert unsupported_numbers("@origin[Japan] @mean_mpg[30.45]", shown) == []
    assert unsupported_numbers("150 rows, 5 columns; 37.26 % malignant", shown) == []
    assert unsupported_numbers("From 1980 on, 2 decimals: 27.89", shown) == []
    assert unsupported_numbers("1.2e-05 is tiny", shown) == []
    assert unsupported_numbers("@mean_mpg[30.14] @count[406]", shown) == ["30.14", "406"]
    assert unsupported_numbers("It is 3.4 cm.\n@max[3.4]", ["(no output)"]) == ["3.4"]
    assert unsupported_numbers("1,234 sold", ["1234"]) == []
    text = unsupported_numbers_text(["30.14", "406"], "run_python")
    assert text.startswith("No output of the code you ran shows 30.14, 406,")
    assert "Call run_python with code that prints" in text
    assert "insert_cell with run set to true" in unsupported_numbers_text(["1"], "insert_cell")
    assert failed_code_text("run_python").startswith("Your last code failed, so the numbers")


def test_what_the_model_was_shown_leaves_out_its_replies_and_failures() -> None:
    sent = [
        UserMessage(content="How many rows? 7 columns"),
        faux_assistant_message("@rows[99]"),
        ToolResultMessage(
            tool_call_id="a", tool_name="run_python", content=[TextContent(text="line 12")],
            is_error=True,
        ),
        ToolResultMessage(
            tool_call_id="b", tool_name="run_python", content=[TextContent(text="3")]
        ),
        CustomMessage(custom_type="notebook_changes", content="In [4]: x = 5", display=True),
        CustomMessage(custom_type="data_preview", content="a\n1", display=True),
    ]  # fmt: skip
    assert shown_texts(sent) == ["How many rows? 7 columns", "3", "In [4]: x = 5"]


SCRIPT = """
from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider
faux = register_faux_provider(tokens_per_second=1000)
prices = [2.0, 4.0]
seen = []
def final(context, options, state, model):
    last = context.messages[-1].content
    seen.append(last if isinstance(last, str) else "".join(b.text for b in last))
    return faux_assistant_message(REPLY)
faux.set_responses([
    faux_assistant_message([faux_tool_call("list_variables", {}, id="t1")]),
    faux_assistant_message(""),
    final,
    faux_assistant_message("never reached"),
])
%model faux/faux-1
"""

REPORT = """
import json, pi_notebook
pi = pi_notebook.current()
def text(content):
    return content if isinstance(content, str) else "".join(b.text for b in content)
users = [text(e.message.content) for e in pi.session.get_entries()
         if getattr(getattr(e, "message", None), "role", None) == "user"]
print(json.dumps({"users": users, "seen": seen, "state": pi.last_run.state}, default=str))
"""


PROMPT = "%%agent --wait\nWhat is the mean price? Answer in this format:\n@mean_price[value]"


def _run(reply: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """The report of a run whose model calls a tool, replies with no text, then ``reply``."""
    script = SCRIPT.replace("REPLY", repr(reply))
    nb = execute(["%load_ext pi_notebook", script, PROMPT, REPORT], tmp_path)
    report = json.loads(outputs_text(nb.cells[3]))
    assert report["state"] == "done", report
    return report, outputs_text(nb.cells[2])


def test_a_run_ending_without_its_answer_is_asked_once_in_a_real_kernel(tmp_path: Path) -> None:
    report, shown = _run("@mean_price[3.0]", tmp_path)
    asked = follow_up_text("@mean_price[value]")
    assert report["users"][-1] == asked  # kept in the session like any follow-up
    assert report["seen"] == [asked]  # the model was sent it
    assert "@mean_price[3.0]" in shown and "never reached" not in shown


def test_the_follow_up_is_sent_once_a_run(tmp_path: Path) -> None:
    # the answer after the follow-up still lacks the format: the run ends all the same
    report, shown = _run("about three", tmp_path)
    assert len(report["users"]) == 2 and len(report["seen"]) == 1
    assert "never reached" not in shown


# --- numbers stated without code, errors the model can act on: the evaluation harness's path


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def call(name: str, arguments: dict[str, Any], call_id: str) -> Reply:
    made = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return Reply.sse(
        sse_chunks([chunk({"tool_calls": [made]}), chunk({}, "tool_calls")], done=True)
    )


def answer(text: str) -> Reply:
    return Reply.sse(sse_chunks([chunk({"content": text}), chunk({}, "stop")], done=True))


def _through_the_harness(
    task: Any, replies: list[Reply], tmp_path: Path
) -> tuple[Any, list[dict[str, Any]]]:
    """``task`` through the evaluation harness against a model replying ``replies`` over
    HTTP on 127.0.0.1: the result, and the request bodies the model was sent."""
    with serving(replies) as server:
        model = custom_model("m", f"{server.url}/v1", provider="served", max_tokens=256)
        result = run_task(
            "pi_notebook", task, ModelSpec("served/m", model), tmp_path / "out", time_limit=120
        )
        return result, [r.json() for r in server.requests]


BAD = "import pandas as pd\ndf = pd.read_csv('t.csv')\nprint(df['A'].count())"
GOOD = "print(df['a'].count())"


def test_numbers_without_code_are_sent_back_and_errors_can_be_acted_on(tmp_path: Path) -> None:
    # through the evaluation harness: a real kernel, %%agent, the provider over HTTP
    task = rows_task(tmp_path)
    replies = [
        answer("The table has 10 rows.\n@rows[10]"),
        call("run_python", {"code": BAD}, "call_1"),
        call("read_last_error", {}, "call_2"),
        call("run_python", {"code": GOOD}, "call_3"),
        answer("The table has 3 rows.\n@rows[3]"),
    ]
    result, bodies = _through_the_harness(task, replies, tmp_path)
    assert result.right, result
    assert bodies[1]["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": unchecked_numbers_text("run_python")}],
    }
    # the file the prompt names is shown before the prompt, once
    first = json.dumps(bodies[0]["messages"])
    assert "t.csv (the whole file):\\n```\\na\\n1\\n2\\n3\\n```" in first
    assert all(json.dumps(b["messages"]).count("t.csv (the whole file)") == 1 for b in bodies)
    # the guess stays in the session but is not sent again
    assert not any("10 rows" in json.dumps(b["messages"]) for b in bodies[1:])
    session = Path(result.transcript).read_text()
    assert "The table has 10 rows." in session and '"customType":"data_preview"' in session

    def tool_text(body: dict[str, Any]) -> str:
        return str(body["messages"][-1]["content"])

    failed = tool_text(bodies[2])
    assert "KeyError: 'A'" in failed
    assert "Hint: 'A' is not there. Did you mean 'a'? The keys are: 'a'" in failed
    read = tool_text(bodies[3])
    assert read.startswith("Your last run_python call failed (no cell has failed since):")
    assert "print(df['A'].count())" in read and "KeyError: 'A'" in read
    assert tool_text(bodies[4]).strip() == "3"
    assert len(bodies) == 5  # asked once: the final answer is not checked again


def test_a_number_no_output_showed_is_sent_back_once(tmp_path: Path) -> None:
    task = rows_task(tmp_path)
    silent = "import pandas as pd\ndf = pd.read_csv('t.csv')\nrows = len(df)"
    replies = [
        call("run_python", {"code": silent}, "call_1"),
        answer("The table has 4 rows.\n@rows[4]"),
        call("run_python", {"code": "print(rows)"}, "call_2"),
        answer("@rows[3]"),
    ]
    result, bodies = _through_the_harness(task, replies, tmp_path)
    assert result.right, result
    assert str(bodies[1]["messages"][-1]["content"]) == (
        "(no output: the code printed nothing. To see the value, print it: print(rows))"
    )
    assert bodies[2]["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": unsupported_numbers_text(["4"], "run_python")}],
    }
    assert not any("4 rows" in json.dumps(b["messages"]) for b in bodies[2:])
    assert len(bodies) == 4  # the right answer is not sent back


def test_numbers_stated_right_after_failing_code_are_sent_back_once(tmp_path: Path) -> None:
    task = rows_task(tmp_path)
    replies = [
        call("run_python", {"code": BAD}, "call_1"),
        answer("@rows[2]"),
        call("run_python", {"code": GOOD}, "call_2"),
        answer("@rows[3]"),
    ]
    result, bodies = _through_the_harness(task, replies, tmp_path)
    assert result.right, result
    assert bodies[2]["messages"][-1]["content"] == [
        {"type": "text", "text": failed_code_text("run_python")}
    ]
    assert len(bodies) == 4
