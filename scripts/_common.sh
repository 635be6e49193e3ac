# Shared by scripts/run and scripts/test: locate the repo, choose the ROS 2 distribution and
# bring its set-up up to date.
# shellcheck shell=bash
RBD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RBD_ROOT

# The ROS 2 distribution: ROS_DISTRO (a sourced ROS 2 sets it), default jazzy. Each supported
# one has its own pinned requirements (constraints/<distro>.txt) and venv (.venv for jazzy,
# .venv-<distro> otherwise); scripts/bootstrap.py holds the table.
export ROS_DISTRO="${ROS_DISTRO:-jazzy}"

# The interpreter that runs scripts/bootstrap.py (standard library only). bootstrap.py itself
# chooses the venv's Python: $RBD_PYTHON, else python3.12, else python3.11.
rbd_python() {
  local py="${RBD_PYTHON:-}"
  # RBD_PYTHON may name an interpreter (a path or a command) or a version (3.11): only the
  # former can run bootstrap.py, which reads RBD_PYTHON itself either way.
  if [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c '' >/dev/null 2>&1; then
    command -v "$py"
    return 0
  fi
  for py in python3.12 python3.11 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c '' >/dev/null 2>&1; then
      command -v "$py"
      return 0
    fi
  done
  echo "[bootstrap] ERROR: no python3.12 or python3.11 on PATH (set RBD_PYTHON=/path/to/python3.12)" >&2
  return 1
}

rbd_bootstrap() {
  local py
  py="$(rbd_python)" || return 1
  if [ -n "${AMENT_PREFIX_PATH:-}" ]; then
    # A sourced ROS 2 would mix its libraries and Python packages into the wheel venv: the
    # scripts run on the venv alone, with the sourced distribution's name (ROS_DISTRO). To
    # build and test against the sourced /opt/ros/<distro> itself, use a colcon workspace
    # (docs/distros.md).
    echo "[bootstrap] note: a sourced ROS 2 is set aside (AMENT_PREFIX_PATH, CMAKE_PREFIX_PATH," \
      "PYTHONPATH, LD_LIBRARY_PATH); using the ROS 2 $ROS_DISTRO wheels" >&2
    unset AMENT_PREFIX_PATH CMAKE_PREFIX_PATH PYTHONPATH LD_LIBRARY_PATH COLCON_PREFIX_PATH
  elif [ -n "${PYTHONPATH:-}" ]; then
    echo "[bootstrap] note: PYTHONPATH is set aside for the venv" >&2
    unset PYTHONPATH
  fi
  RBD_VENV="$("$py" "$RBD_ROOT/scripts/bootstrap.py" --print-venv)" || return 1
  export RBD_VENV
  "$py" "$RBD_ROOT/scripts/bootstrap.py"
}
