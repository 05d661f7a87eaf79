"""The approval policy: ``%approve`` and ``PI_NOTEBOOK_APPROVE``, in real kernels (nbclient)
against the faux provider, plus the policy's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.notebook.approval_policy import ApprovalPolicy
from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text
from tests.notebook.test_notebook_kernel import ENV, session_lines

LOAD = "%load_ext pi_notebook\n%model faux/faux-1\n%tools add run_python"
CALL = "faux_assistant_message([faux_tool_call('run_python', {'code': 'print(6 * 7)'})])"
RESULTS = (
    "import pi_notebook\n"
    "agent = pi_notebook.current()\n"
    "results = [m for m in agent.session.build_context().messages if m.role == 'toolResult']\n"
    "texts = [r.content[0].text for r in results]\n"
    "cards = [i for i in agent.last_run.view.items if i.get('kind') == 'tool_result']\n"
)


def setup(*responses: str) -> str:
    return FAUX_SETUP.format(tps=None) + f"faux.set_responses([{', '.join(responses)}])"


def test_rules_parse_and_combine() -> None:
    policy = ApprovalPolicy.parse("run_python=allow, insert_cell=deny")
    assert policy.decide("run_python") == "allow"
    assert policy.decide("insert_cell") == "deny"
    assert policy.decide("edit_cell") == "ask"  # the default
    assert ApprovalPolicy.parse("allow").decide("anything") == "allow"
    everything = ApprovalPolicy.parse("run_python=deny allow")  # a bare decision is 'all'
    assert everything.rules == {"all": "allow"}
    merged = ApprovalPolicy({"all": "deny", "run_python": "ask"}).merged(policy)
    assert merged.decide("run_python") == "allow" and merged.decide("x") == "deny"
    assert ApprovalPolicy.from_data({"rules": {"run_python": "sometimes"}}) is None
    assert ApprovalPolicy.from_data("garbage") is None
    with pytest.raises(ValueError, match="PI_NOTEBOOK_APPROVE: 'maybe' is not one of"):
        ApprovalPolicy.parse("run_python=maybe")
    with pytest.raises(ValueError, match="without a tool name"):
        ApprovalPolicy.parse("=allow")


def test_allow_runs_without_asking_and_the_card_says_so(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(CALL, "faux_assistant_message('42')"),
            LOAD,
            "%approve",
            "%approve run_python allow",
            "%%agent --wait\nWhat is six times seven?",
            RESULTS + "assert texts == ['42\\n'] or texts[0].strip() == '42', texts\n"
            "approval = cards[0]['approval']\n"
            "assert approval['state'] == 'allowed', approval\n"
            "assert 'approval policy' in approval['reason'], approval",
            "%approve",
        ],
        tmp_path,
        env=ENV,
    )
    assert outputs_text(nb.cells[2]).strip() == "all tools: ask"
    assert "approval policy: run_python: allow" in outputs_text(nb.cells[3])
    assert "run_python: allow" in outputs_text(nb.cells[6])
    recorded = [
        e for e in session_lines(tmp_path) if e.get("customType") == "pi_notebook.approval_policy"
    ]
    assert recorded and recorded[-1]["data"] == {"rules": {"run_python": "allow"}}


def test_deny_tells_the_model_and_reopening_keeps_the_policy(tmp_path: Path) -> None:
    execute(
        [
            setup(CALL, "faux_assistant_message('I could not run it.')"),
            LOAD,
            "%approve all deny",
            "%%agent --wait\nWhat is six times seven?",
            RESULTS + "assert results[0].is_error, results\n"
            "assert 'approval policy denies it' in texts[0], texts\n"
            "assert cards[0]['approval']['state'] == 'denied', cards",
        ],
        tmp_path,
        env=ENV,
    )
    # a new kernel on the same notebook session: the recorded policy is back
    nb = execute(["%load_ext pi_notebook", "%approve"], tmp_path, env=ENV)
    assert outputs_text(nb.cells[1]).strip() == "all tools: deny"


def test_environment_variable_sets_and_records_the_policy(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(CALL, "faux_assistant_message('42')"),
            LOAD,
            "%%agent --wait\nWhat is six times seven?",
            RESULTS + "assert not results[0].is_error and '42' in texts[0], texts",
            "%approve",
        ],
        tmp_path,
        env={**ENV, "PI_NOTEBOOK_APPROVE": "run_python=allow"},
    )
    assert "run_python: allow" in outputs_text(nb.cells[4])
    assert any(
        e.get("customType") == "pi_notebook.approval_policy" for e in session_lines(tmp_path)
    )


def test_bad_arguments_are_one_usage_line(tmp_path: Path) -> None:
    nb = execute(
        ["%load_ext pi_notebook", "%approve run_pyton allow", "%approve run_python maybe"],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    for index, needle in ((1, "No tool named 'run_pyton'"), (2, "invalid choice: 'maybe'")):
        text = outputs_text(nb.cells[index])
        assert text.startswith("UsageError: ") and needle in text, text
        assert "Traceback" not in text
