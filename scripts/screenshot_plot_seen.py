"""Make docs/plot-seen-by-model.png: a notebook plots, a faux model that takes images calls
``read_cell`` on the plot cell, the session is exported as HTML, and headless Debian chromium
takes a picture of the tool result that carries the plot.

Run from the repository root: ``python3 scripts/screenshot_plot_seen.py``.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from PIL import Image, ImageChops

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "plot-seen-by-model.png"
USER_BACKGROUND = (221, 244, 255)  # the export's user message box

CELLS = [
    "%load_ext pi_notebook",  # In[1]
    "from pi_notebook.ai import faux_assistant_message, faux_tool_call, register_faux_provider\n"
    "faux = register_faux_provider()  # its model takes text and images\n"
    "faux.set_responses([\n"
    "    faux_assistant_message([faux_tool_call('read_cell', {'cell': '4'})],"
    " stop_reason='toolUse'),\n"
    "    faux_assistant_message('Monthly sales rise to a peak in April, then fall back.'),\n"
    "])",
    "%model faux/faux-1\n# the plot reaches the model only through read_cell\n%agent_context off",
    "%matplotlib inline\n"
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(5, 3))\n"
    "plt.plot(['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun'], [12, 15, 21, 30, 22, 17], marker='o')\n"
    "plt.title('Monthly sales')\n"
    "plt.show()",  # In[4]
    "%%agent --wait\nWhat does the plot in In[4] show?",
    "%export session.html",
]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
        client = NotebookClient(nb, timeout=120, resources={"metadata": {"path": folder}})
        client.execute()
        raw = work / "raw.png"
        subprocess.run(
            [
                "/usr/bin/chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--hide-scrollbars",
                f"--screenshot={raw}",
                "--window-size=900,1800",
                (work / "session.html").as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        picture = Image.open(raw).convert("RGB")
    # From the user's prompt (the first light-blue row) to the end of the conversation.
    column = [picture.getpixel((picture.width // 2, y)) for y in range(picture.height)]
    top = column.index(USER_BACKGROUND) - 6
    blank = Image.new("RGB", picture.size, (255, 255, 255))
    drawn = ImageChops.difference(picture, blank).getbbox()
    if drawn is None:
        raise SystemExit("chromium took a blank picture")
    bottom = drawn[3] + 12
    picture = picture.crop((0, top, picture.width, bottom))
    picture.quantize(colors=128).save(OUT, optimize=True)
    print(OUT, picture.size, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
