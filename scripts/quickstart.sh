#!/usr/bin/env bash
# Set up pi_notebook and open the quickstart notebook in JupyterLab.
#
#   bash scripts/quickstart.sh               # set up (once), then start JupyterLab
#   bash scripts/quickstart.sh --setup-only  # set up, don't start JupyterLab
#   bash scripts/quickstart.sh --no-browser  # other arguments go to `jupyter lab`
#
# Safe to run again: each step is skipped when it is done already. It installs this repository
# (editable, with the embedded local model, JupyterLab and what `bash scripts/test.sh` needs) into
# the active Python environment — activate a virtual environment first if you want it isolated —
# and downloads the local model's weights once (93 MB, checked by sha256). Without an API key in the environment the notebooks use
# that local model; set e.g. ANTHROPIC_API_KEY before running this to use a hosted model instead.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}

setup_only=false
lab_args=()
for arg in "$@"; do
  if [ "$arg" = "--setup-only" ]; then setup_only=true; else lab_args+=("$arg"); fi
done

step() { printf '\n==> %s\n' "$*"; }

if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "pi_notebook needs Python 3.11 or newer; $PY is $("$PY" --version 2>&1)." >&2
  echo "Run with PYTHON=/path/to/python3.11 bash scripts/quickstart.sh" >&2
  exit 1
fi

# 1. The package, editable, with the local model (xllamacpp), JupyterLab and the test tools.
#    `-I` keeps the check honest: the repository itself on sys.path does not count as installed.
installed() {
  "$PY" -I - "$ROOT" <<'EOF' 2>/dev/null
import pathlib, sys
import jupyterlab, nbclient, pi_notebook, pytest, xllamacpp  # noqa: F401
sys.exit(pathlib.Path(pi_notebook.__file__).resolve().parents[1] != pathlib.Path(sys.argv[1]))
EOF
}
if installed; then
  step "pi_notebook, the local model runtime, JupyterLab and the test tools are installed"
else
  step "Installing pi_notebook with the local model runtime, JupyterLab and the test tools"
  if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -e ".[local,lab,test]"; then
    echo >&2
    echo "pip could not install into $PY's environment. Create and activate a virtual" >&2
    echo "environment, then run this script again:" >&2
    echo "  python3 -m venv .venv && . .venv/bin/activate && bash scripts/quickstart.sh" >&2
    exit 1
  fi
fi

# 2. The embedded model's weights (cached under ~/.cache/pi_notebook/models; verified each time).
step "Fetching the embedded local model (SmolLM2-135M)"
"$PY" -m pi_notebook.ai.local fetch

if $setup_only; then
  step "Set up. Start JupyterLab on the quickstart with: bash scripts/quickstart.sh"
  exit 0
fi

# 3. JupyterLab on the quickstart notebook, serving the repository (the other notebooks are in
#    notebooks/). Ctrl-C stops it.
step "Starting JupyterLab on notebooks/quickstart.ipynb (Ctrl-C to stop)"
if [ "$(id -u)" -eq 0 ]; then lab_args+=(--allow-root); fi  # containers often run as root
exec "$PY" -m jupyterlab --ServerApp.root_dir="$ROOT" \
  --LabApp.default_url=/lab/tree/notebooks/quickstart.ipynb ${lab_args[@]+"${lab_args[@]}"}
