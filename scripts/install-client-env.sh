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
# A `# python-below: X.Y` line also caps it: the newest CPython >= the required one and < X.Y (for
# a lock whose pins have wheels only up to some Python, e.g. numpy<2 has none for 3.13).
# A venv counts as installed only once its stamp file exists; one without it is redone.
#
# A lock with an `# overlay: trainer` line is installed as an overlay on the trainer's environment
# (scripts/install-trainer.sh, installed first when missing), the way scripts/install-art-client.sh
# does: the venv is made with the trainer venv's own Python, holds exactly the lock's pins, and a
# .pth file written after pip install appends the trainer venv's site-packages to sys.path (after
# the overlay's own), so torch, transformers, ... come from there and are not pinned in the lock.
# Its cache key also covers the trainer's lock; pip check then covers both.
# A `# pip-check-allows: LINE` line accepts that one finding of pip check (LINE as pip prints it),
# for a requirement the lock knowingly leaves unmet (the lock's header says which and why).
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
below="$(sed -n 's/^# python-below: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' "$LOCK" | head -n 1)"
overlay="$(sed -n 's/^# overlay: *\([a-z][a-z]*\).*/\1/p' "$LOCK" | head -n 1)"
if [ -n "$overlay" ] && [ "$overlay" != trainer ]; then
  echo "$WHO: unknown '# overlay: $overlay' in $LOCK (only 'trainer' is known)" >&2
  exit 1
fi

# version_of PYTHON: "X.Y" of a working CPython, or nothing.
version_of() {
  "$1" -c 'import sys, platform; assert platform.python_implementation() == "CPython"; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true
}
# at_least X.Y MIN: true when X.Y >= MIN.
at_least() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}
# The newest CPython >= $required (and < $below, when the lock has that line): python3.N on PATH
# (pyenv's shims included), then pyenv's own versions directory; resolved to the real interpreter
# (sys.executable), so a shim is not cached.
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
    if [ -n "$below" ] && at_least "$version" "$below"; then continue; fi
    if [ -z "$best_version" ] || ! at_least "$best_version" "$version"; then
      best="$("$candidate" -c 'import sys; print(sys.executable)')"
      best_version="$version"
    fi
  done
  [ -n "$best" ] && printf '%s\n' "$best"
}

TRAINER_SITE=""
EXTRA_KEY=""
if [ "$overlay" = trainer ]; then
  # The overlay lives on the trainer's environment: make sure it is there (a no-op when it is), and
  # use the Python that environment was made with.
  TRAINER_LINK="$ROOT/.cache/trainer-venv"
  if ! "$TRAINER_LINK/bin/python" -c '' >/dev/null 2>&1; then
    bash "$ROOT/scripts/install-trainer.sh"
  fi
  TRAINER_PY="$(readlink -f "$TRAINER_LINK")/bin/python"
  TRAINER_SITE="$("$TRAINER_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  EXTRA_KEY="$(cat "$ROOT/services/training/torch_trainer/requirements.lock")"
  PYTHON="$("$TRAINER_PY" -c 'import sys; print(sys._base_executable)')"
  version="$(version_of "$PYTHON")"
  if [ -z "$version" ] || ! at_least "$version" "$required" || { [ -n "$below" ] && at_least "$version" "$below"; }; then
    echo "$WHO: the trainer's environment runs Python '${version:-?}' ($PYTHON); $NAME needs $required or newer${below:+, below $below}" >&2
    exit 1
  fi
else
  PYTHON="$(find_python || true)"
fi
if [ -z "$PYTHON" ]; then
  wanted=">= $required" hint="Python $required+"
  [ -z "$below" ] || { wanted=">= $required and < $below"; hint="a Python >= $required and < $below"; }
  reason="no CPython $wanted on PATH (python3.N, python3) or in pyenv (${PYENV_ROOT:-$HOME/.pyenv}/versions)"
  echo "$WHO: WARNING: $reason; the $NAME client tests cannot run here (install $hint to run them)"
  printf '%s\n' "$reason" >"$MISSING"
  rm -f "$LINK"
  exit 0
fi
PYVER="$("$PYTHON" --version 2>&1)"

KEY="$({ cat "$LOCK"; printf '%s\n' "$PYVER"; [ -z "$EXTRA_KEY" ] || printf '%s\n' "$EXTRA_KEY"; } | sha256sum | cut -c1-16)"
VENV="$CACHE/client-$NAME-$KEY"
STAMP="$VENV/.srl-client-installed"

# shellcheck source=link-cached.sh
source "$ROOT/scripts/link-cached.sh"
# shellcheck source=venv-install.sh
source "$ROOT/scripts/venv-install.sh"
venv_reuse_or_lock "$WHO" "$VENV" "$STAMP" "$KEY" "$LINK" "$CACHE/client-$NAME-$KEY.lock" "$PYVER"

START=$SECONDS
if [ -n "$TRAINER_SITE" ]; then
  echo "$WHO: using $PYVER at $PYTHON (the trainer's; an overlay on $TRAINER_SITE)"
else
  echo "$WHO: using $PYVER at $PYTHON (the newest CPython >= $required${below:+ and < $below} found)"
fi
venv_fresh "$WHO" "$VENV" "$PYVER" "the $NAME client environment ($(grep -c '==' "$LOCK") pinned packages, first time only)" "$PYTHON"
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check --no-input)
if [ -n "$TRAINER_SITE" ]; then
  # The venv's bundled setuptools would hide the trainer's pinned one.
  "${PIP[@]}" uninstall --yes --quiet setuptools >/dev/null 2>&1 || true
fi
venv_install_lock "$WHO" "the $NAME client environment" "$VENV" "$LOCK" "$CACHE/client-$NAME-$KEY.pip.log"
if [ -n "$TRAINER_SITE" ]; then
  # After the overlay's own site-packages (a .pth line is appended to sys.path), so its pins win.
  # Written after pip install, so pip never sees (nor tries to replace) the trainer's packages.
  printf '%s\n' "$TRAINER_SITE" >"$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz-srl-trainer-venv.pth"
fi
echo "$WHO: checking the requirements of every package (pip check)"
# A lock may name findings of pip check it knows of and accepts, one `# pip-check-allows: LINE`
# per finding, LINE exactly as pip check prints it (its header says why); any other fails.
allowed="$(sed -n 's/^# pip-check-allows: *//p' "$LOCK")"
check_status=0
check_output="$("${PIP[@]}" check 2>&1)" || check_status=$?
printf '%s\n' "$check_output"
if [ "$check_status" -ne 0 ]; then
  unexpected="$check_output"
  if [ -n "$allowed" ]; then
    unexpected="$(printf '%s\n' "$check_output" | grep -vxF -f <(printf '%s\n' "$allowed") || true)"
  fi
  if [ -n "$unexpected" ]; then
    echo "$WHO: the lock's packages do not satisfy each other's requirements (above)" >&2
    exit 1
  fi
  echo "$WHO: pip check found only what the lock's '# pip-check-allows:' lines accept (its header says why)"
fi
venv_stamp "$STAMP" "$KEY"
link_cached "$VENV" "$LINK"
echo "$WHO: done in $((SECONDS - START)) s: $VENV (linked from .cache/clients/$NAME)"

others="$(find "$CACHE" -maxdepth 1 -name "client-$NAME-*" -type d ! -name "client-$NAME-$KEY" 2>/dev/null || true)"
if [ -n "$others" ]; then
  echo "$WHO: note: older $NAME environments remain (delete them if no other checkout uses them):"
  printf '  %s\n' $others
fi
