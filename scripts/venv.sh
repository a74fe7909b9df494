#!/usr/bin/env bash
# The project's Python virtual environment: made once per machine outside the
# clone (so that every checkout and CI's fresh clone reuse it instead of
# fetching PyTorch again), from python/requirements.txt.
#
#   scripts/venv.sh path     prints where it lives
#   scripts/venv.sh python   prints its interpreter (exit 1 when not made yet)
#   scripts/venv.sh ensure   makes or updates it (idempotent; scripts/setup.sh)
#
# ETLLM_VENV chooses another place; ETLLM_VENV_PYTHON the interpreter it is
# made from (default: python3.11 or python3 on PATH, 3.10 or newer).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${ETLLM_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/etllm/venv}
REQUIREMENTS=$ROOT/python/requirements.txt
STAMP=$VENV/.etllm-requirements.sha256

base_python() {
  local candidates=()
  [ -n "${ETLLM_VENV_PYTHON:-}" ] && candidates+=("$ETLLM_VENV_PYTHON")
  candidates+=(python3.11 python3 /usr/bin/python3)
  for p in "${candidates[@]}"; do
    if command -v "$p" > /dev/null 2>&1 &&
       "$p" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2> /dev/null; then
      command -v "$p"
      return 0
    fi
  done
  echo "venv.sh: no Python 3.10 or newer with the venv and ensurepip modules" \
       "(Debian: apt-get install python3-venv; or set ETLLM_VENV_PYTHON)" >&2
  return 1
}

case "${1:-}" in
  path)
    echo "$VENV" ;;
  python)
    if [ -x "$VENV/bin/python" ]; then echo "$VENV/bin/python"; else exit 1; fi ;;
  ensure)
    want=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
    if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2> /dev/null)" = "$want" ]; then
      echo "venv: $VENV is up to date"
      exit 0
    fi
    if [ ! -x "$VENV/bin/python" ]; then
      py=$(base_python)
      echo "venv: making $VENV from $py"
      mkdir -p "$(dirname "$VENV")"
      "$py" -m venv "$VENV"
    fi
    echo "venv: installing python/requirements.txt into $VENV (PyTorch: several GB, once per machine)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQUIREMENTS"
    echo "$want" > "$STAMP"
    echo "venv: done" ;;
  *)
    echo "usage: scripts/venv.sh path|python|ensure" >&2
    exit 2 ;;
esac
