#!/usr/bin/env bash
# Installs one client environment of the wandb / ART test matrix (test/wandb/python/clients/NAME.lock)
# as a standalone venv cached OUTSIDE the clone:
#   ${SRL_CACHE_DIR:-$HOME/.cache/srl}/client-NAME-<16 hex of sha256(the lock + the Python's version)>
# and points the stable link .cache/clients/NAME at it. Usage: install-client-env.sh NAME
#
# The lock's `# requires-python: X.Y` line names the oldest Python it runs on; the newest CPython
# >= X.Y on the machine is used (python3.N on PATH, then pyenv's versions), and the script says
# where it found it. Without one, it says so, writes .cache/clients/NAME.missing (the reason; the
# test command reports those tests as not run) and exits 0: Python 3.11 is the project's
# prerequisite, newer ones are used where a client needs them and the machine has them.
# A venv counts as installed only once its stamp file exists; one without it is redone.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="${1:?usage: install-client-env.sh NAME (a lock file in test/wandb/python/clients/)}"
LOCK="$ROOT/test/wandb/python/clients/$NAME.lock"
CACHE="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
LINK_DIR="$ROOT/.cache/clients"
LINK="$LINK_DIR/$NAME"
MISSING="$LINK_DIR/$NAME.missing"
WHO="install-client-env($NAME)"
if [ ! -f "$LOCK" ]; then
  echo "$WHO: $LOCK is missing" >&2
  exit 1
fi
mkdir -p "$LINK_DIR"
rm -f "$MISSING"

required="$(sed -n 's/^# requires-python: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' "$LOCK" | head -n 1)"
required="${required:-3.11}"

# version_of PYTHON: "X.Y" of a working CPython, or nothing.
version_of() {
  "$1" -c 'import sys, platform; assert platform.python_implementation() == "CPython"; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true
}
# at_least X.Y MIN: true when X.Y >= MIN.
at_least() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}
# The newest CPython >= $required: python3.N on PATH (pyenv's shims included), then pyenv's own
# versions directory; resolved to the real interpreter (sys.executable), so a shim is not cached.
find_python() {
  local best="" best_version="" candidate version
  local candidates=()
  for minor in $(seq 30 -1 0); do
    command -v "python3.$minor" >/dev/null 2>&1 && candidates+=("$(command -v "python3.$minor")")
  done
  command -v python3 >/dev/null 2>&1 && candidates+=("$(command -v python3)")
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
  for candidate in "$pyenv_root"/versions/*/bin/python3; do
    [ -x "$candidate" ] && candidates+=("$candidate")
  done
  for candidate in "${candidates[@]}"; do
    version="$(version_of "$candidate")"
    [ -n "$version" ] || continue
    at_least "$version" "$required" || continue
    if [ -z "$best_version" ] || ! at_least "$best_version" "$version"; then
      best="$("$candidate" -c 'import sys; print(sys.executable)')"
      best_version="$version"
    fi
  done
  [ -n "$best" ] && printf '%s\n' "$best"
}

PYTHON="$(find_python || true)"
if [ -z "$PYTHON" ]; then
  reason="no CPython >= $required on PATH (python3.N, python3) or in pyenv (${PYENV_ROOT:-$HOME/.pyenv}/versions)"
  echo "$WHO: WARNING: $reason; the $NAME client tests cannot run here (install Python $required+ to run them)"
  printf '%s\n' "$reason" >"$MISSING"
  rm -f "$LINK"
  exit 0
fi
PYVER="$("$PYTHON" --version 2>&1)"

KEY="$({ cat "$LOCK"; printf '%s\n' "$PYVER"; } | sha256sum | cut -c1-16)"
VENV="$CACHE/client-$NAME-$KEY"
STAMP="$VENV/.srl-client-installed"

# shellcheck source=link-cached.sh
source "$ROOT/scripts/link-cached.sh"
# shellcheck source=venv-install.sh
source "$ROOT/scripts/venv-install.sh"
venv_reuse_or_lock "$WHO" "$VENV" "$STAMP" "$KEY" "$LINK" "$CACHE/client-$NAME-$KEY.lock" "$PYVER"

START=$SECONDS
echo "$WHO: using $PYVER at $PYTHON (the newest CPython >= $required found)"
venv_fresh "$WHO" "$VENV" "$PYVER" "the $NAME client environment ($(grep -c '==' "$LOCK") pinned packages, first time only)" "$PYTHON"
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check --no-input)
venv_install_lock "$WHO" "the $NAME client environment" "$VENV" "$LOCK" "$CACHE/client-$NAME-$KEY.pip.log"
echo "$WHO: checking the requirements of every package (pip check)"
if ! "${PIP[@]}" check; then
  echo "$WHO: the lock's packages do not satisfy each other's requirements (above)" >&2
  exit 1
fi
venv_stamp "$STAMP" "$KEY"
link_cached "$VENV" "$LINK"
echo "$WHO: done in $((SECONDS - START)) s: $VENV (linked from .cache/clients/$NAME)"

others="$(find "$CACHE" -maxdepth 1 -name "client-$NAME-*" -type d ! -name "client-$NAME-$KEY" 2>/dev/null || true)"
if [ -n "$others" ]; then
  echo "$WHO: note: older $NAME environments remain (delete them if no other checkout uses them):"
  printf '  %s\n' $others
fi
