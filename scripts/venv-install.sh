# Sourced by the install scripts of the Python environments (install-trainer.sh,
# install-art-client.sh): the steps they share when installing a pinned environment cached
# outside the clone.

# venv_ready VENV STAMP KEY: true when VENV was installed completely for KEY (its stamp holds KEY
# and its python runs).
venv_ready() {
  [ -f "$2" ] && [ "$(cat "$2" 2>/dev/null)" = "$3" ] && "$1/bin/python" -c '' >/dev/null 2>&1
}

# venv_fresh WHO VENV PYVER WHAT [PYTHON]: removes an environment an earlier install left
# unfinished at VENV (no completion stamp), says what it creates and creates VENV with PYTHON
# (python3 by default); exits with a hint when `PYTHON -m venv` fails.
venv_fresh() {
  local who="$1" venv="$2" pyver="$3" what="$4" python="${5:-python3}"
  if [ -e "$venv" ]; then
    echo "$who: removing the unfinished environment at $venv (no completion stamp; an earlier install stopped part way)"
    rm -rf "$venv"
  fi
  echo "install: creating $what at $venv"
  if ! "$python" -m venv "$venv"; then
    echo "$who: '$python -m venv' failed ($pyver); on Debian/Ubuntu install the python3-venv package" >&2
    rm -rf "$venv"
    exit 1
  fi
}

# venv_reuse_or_lock WHO VENV STAMP KEY LINK LOCKFILE WHAT: when VENV is installed for KEY, points
# LINK at it, says so and ends the calling script; otherwise takes the install lock (waiting for a
# concurrent install of the same environment, then checking again) and returns, so the caller
# installs. Needs link-cached.sh sourced.
venv_reuse_or_lock() {
  local who="$1" venv="$2" stamp="$3" key="$4" link="$5" lockfile="$6" what="$7"
  if venv_ready "$venv" "$stamp" "$key"; then
    link_cached "$venv" "$link"
    echo "$who: ready at $venv ($what)"
    exit 0
  fi
  mkdir -p "$(dirname "$lockfile")"
  venv_lock "$lockfile" "$who"
  if venv_ready "$venv" "$stamp" "$key"; then
    link_cached "$venv" "$link"
    echo "$who: ready at $venv ($what; installed by a concurrent run)"
    exit 0
  fi
}

# venv_stamp STAMP KEY: marks the environment complete for KEY (written whole, then renamed).
venv_stamp() {
  printf '%s\n' "$2" >"$1.tmp"
  mv -f "$1.tmp" "$1"
}

# venv_lock LOCKFILE WHO: holds an exclusive lock on file descriptor 9 until the script ends, so
# parallel runs (several checkouts, test workers) install once; says so while it waits.
venv_lock() {
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$1"
  if ! flock -n 9; then
    echo "$2: another process is installing the same environment; waiting for it"
    flock 9
  fi
}

# pip_install_logged WHAT VENV LOGFILE PIP_COMMAND...: on a terminal, pip's own output (progress
# bars included); under CI or into a log, pip's lines as they come plus a status line every 30 s
# (time so far, MB in place, pip's last line), so long downloads never look stuck. Returns pip's
# exit status.
pip_install_logged() {
  local what="$1" venv="$2" log="$3"
  shift 3
  if [ -t 1 ] && { [ -z "${CI:-}" ] || [ "${CI:-}" = false ]; }; then
    "$@"
    return
  fi
  local start=$SECONDS status=0 heartbeat
  : >"$log"
  (
    exec 9>&- # not the install lock: a sleep left behind must not hold it
    while sleep 30 >/dev/null 2>&1; do
      last="$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -n 1 | cut -c1-160 || true)"
      size="$(du -sm "$venv" 2>/dev/null | cut -f1 || true)"
      echo "install: still installing $what ($((SECONDS - start)) s so far, ${size:-0} MB in place; pip: ${last:-starting})"
    done
  ) &
  heartbeat=$!
  trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
  "$@" --progress-bar off 2>&1 | tee "$log" || status=$?
  kill "$heartbeat" 2>/dev/null || true
  wait "$heartbeat" 2>/dev/null || true
  trap - EXIT
  rm -f "$log"
  return "$status"
}

# venv_install_lock WHO WHAT VENV LOCK LOGFILE: installs exactly LOCK's pins into VENV (pip
# install --no-deps --only-binary=:all: -r LOCK, progress as pip_install_logged shows it); when pip
# fails, says so and ends the calling script with pip's status (the environment has no stamp, so
# the next run redoes it).
venv_install_lock() {
  local who="$1" what="$2" venv="$3" lock="$4" log="$5" status=0
  pip_install_logged "$what" "$venv" "$log" "$venv/bin/python" -m pip --disable-pip-version-check --no-input install --no-deps --only-binary=:all: -r "$lock" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "$who: pip install failed (exit $status); the unfinished environment at $venv is redone on the next run" >&2
    exit "$status"
  fi
}
