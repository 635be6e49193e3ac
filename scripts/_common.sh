# Shared by scripts/run and scripts/test: locate the repo and bring the set-up up to date.
# shellcheck shell=bash
RBD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RBD_ROOT

rbd_bootstrap() {
  local py="${RBD_PYTHON:-}"
  if [ -z "$py" ]; then
    py="$(command -v python3.11 || true)"
  fi
  if [ -z "$py" ] && [ -x "$RBD_ROOT/.venv/bin/python" ]; then
    py="$RBD_ROOT/.venv/bin/python"
  fi
  if [ -z "$py" ]; then
    py="$(command -v python3 || true)"
  fi
  if [ -z "$py" ]; then
    echo "[bootstrap] ERROR: no python3.11 on PATH (set RBD_PYTHON=/path/to/python3.11)" >&2
    return 1
  fi
  "$py" "$RBD_ROOT/scripts/bootstrap.py"
}
