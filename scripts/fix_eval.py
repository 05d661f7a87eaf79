"""How often ``%fix`` repairs a cell that failed on a misspelt column or a missing import.

    python scripts/fix_eval.py OUT [--model PATH.gguf] [--repeats N]

Each case is a notebook run headless in a fresh kernel (nbclient): a cell that builds a small
table, a cell that fails on it (a column named in the wrong case, a typo, ``np`` used without
its import), and ``%fix``. Without a notebook frontend ``%fix`` answers with the corrected cell
in a code block; the case counts as fixed when that code runs on the same table and gives what
the correct cell gives. The model is Qwen2.5-Coder-1.5B as ``scripts/record_workspace.py``
fetches it, served by llama.cpp on 127.0.0.1 (one thread, as the evaluation runs it). Run it
from the tree to measure (``PYTHONPATH=TREE``); the replies and the verdicts go to
``OUT/results.json``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from record_workspace import cached_model  # noqa: E402

from pi_notebook.eval.models import serve_model  # noqa: E402
from pi_notebook.eval.pi_system import kernel_setup, transcript_from_session  # noqa: E402
from pi_notebook.testing import run_notebook  # noqa: E402

TABLES = {
    "diabetes": "import pandas as pd\n"
    "df = pd.DataFrame({'age': [50, 61, 45, 38], 'bmi': [27.1, 31.5, 22.0, 25.3]})",
    "sales": "import pandas as pd\n"
    "sales = pd.DataFrame({'Region': ['N', 'S', 'N', 'E'], 'Revenue': [10.0, 4.0, 6.0, 3.0]})",
    "iris": "import pandas as pd\n"
    "iris = pd.DataFrame({'petal_length': [1.4, 4.5, 1.3, 5.9],\n"
    "                     'species': ['setosa', 'versicolor', 'setosa', 'virginica']})",
    "cars": "import pandas as pd\n"
    "cars = pd.DataFrame({'MPG': [21.0, 22.8, 18.7, 30.4], 'HP': [110, 93, 175, 52]})",
    "tips": "import pandas as pd\n"
    "tips = pd.DataFrame({'total_bill': [16.99, 10.34, 21.01], 'tip': [1.01, 1.66, 3.5]})",
    "values": "values = [3, 5, 10]",
    "wine": "import pandas as pd\n"
    "wine = pd.DataFrame({'alcohol': [14.2, 13.2, 12.4], 'Class': [1, 1, 2]})",
    "titanic": "import pandas as pd\n"
    "titanic = pd.DataFrame({'Survived': [0, 1, 1, 0], 'Pclass': [3, 1, 3, 2]})",
}
CASES = [  # (table, the failing cell, a correct cell)
    ("diabetes", "df['BMI'].mean()", "df['bmi'].mean()"),
    (
        "sales",
        "sales.groupby('region')['Revenue'].sum()",
        "sales.groupby('Region')['Revenue'].sum()",
    ),
    (
        "iris",
        "iris[iris['Species'] == 'setosa']['petal_length'].mean()",
        "iris[iris['species'] == 'setosa']['petal_length'].mean()",
    ),
    ("cars", "cars['mpg'].corr(cars['hp'])", "cars['MPG'].corr(cars['HP'])"),
    (
        "tips",
        "(tips['tips'] / tips['total_bill']).mean()",
        "(tips['tip'] / tips['total_bill']).mean()",
    ),
    ("values", "np.mean(values)", "sum(values) / len(values)"),
    ("wine", "wine.groupby('class')['alcohol'].mean()", "wine.groupby('Class')['alcohol'].mean()"),
    (
        "titanic",
        "titanic.groupby('pclass')['survived'].mean()",
        "titanic.groupby('Pclass')['Survived'].mean()",
    ),
]
_BLOCK = re.compile(r"```(?:python|py)?\n(.*?)(?:```|\Z)", re.S)  # a reply may end inside it


def run_cell(table: str, code: str) -> tuple[Any, str]:
    """What ``code`` gives on ``table`` as a notebook cell: its last expression's value (None
    without one) and what it printed."""
    namespace: dict[str, Any] = {}
    exec(TABLES[table], namespace)
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, "<cell>", "exec"), namespace)
        value = (
            eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace) if last else None
        )
    return value, printed.getvalue()


def same(got: Any, printed: str, want: Any) -> bool:
    if got is None:
        return str(want) in printed
    if hasattr(want, "equals"):
        return bool(want.equals(got)) or (
            hasattr(got, "values") and list(got.values) == list(want.values)
        )
    try:
        return abs(float(got) - float(want)) < 1e-9
    except (TypeError, ValueError):
        return False


def verdict(table: str, reply: str, correct: str) -> str:
    blocks = _BLOCK.findall(reply)
    if not blocks:
        return "no code block"
    try:
        got, printed = run_cell(table, blocks[-1])
    except Exception as exc:  # the model's code: anything may go wrong
        return f"fails: {type(exc).__name__}: {exc}"[:100]
    return "fixed" if same(got, printed, run_cell(table, correct)[0]) else "wrong value"


def fix_notebook(table: str, failing: str) -> Any:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("%load_ext pi_notebook"),
            nbformat.v4.new_code_cell(TABLES[table]),
            nbformat.v4.new_code_cell(failing, metadata={"tags": ["raises-exception"]}),
            nbformat.v4.new_code_cell(
                "%fix\nimport pi_notebook\nawait pi_notebook.current().wait()"
            ),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", type=Path, help="the GGUF file (default: fetched and cached)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    template = REPO / "pi_notebook" / "ai" / "chat_templates" / "qwen2.5.jinja"
    spec, server = serve_model(
        "local/qwen2.5-coder-1.5b",
        gguf=args.model or cached_model(),
        chat_template=template,
        n_ctx=8192,
        threads=1,
    )
    results: list[dict[str, Any]] = []
    try:
        for repeat in range(args.repeats):
            for number, (table, failing, correct) in enumerate(CASES):
                folder = args.out / f"run{repeat}-case{number}"
                folder.mkdir(parents=True, exist_ok=True)
                source = folder / "fix.ipynb"
                nbformat.write(fix_notebook(table, failing), source)
                env = kernel_setup(spec, folder / "ipython")
                done = run_notebook(
                    source, cassette=None, env=env, workdir=folder / "run", timeout=300
                )
                reply = transcript_from_session(done.session_path).reply
                outcome = verdict(table, reply, correct)
                results.append({"failing": failing, "verdict": outcome, "reply": reply})
                print(f"{failing:55} {outcome}", flush=True)
    finally:
        if server is not None:
            server.stop()
    (args.out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    fixed = sum(r["verdict"] == "fixed" for r in results)
    print(f"fixed {fixed} of {len(results)}")


if __name__ == "__main__":
    main()
