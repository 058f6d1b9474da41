# Sourced by the scripts that build a pinned Go program into .tools/bin (install-ferretdb.sh,
# install-s3-server.sh): the steps they share. The caller sets TAG (its name in messages), WHAT,
# VERSION, ROOT, BIN, WRAPPER (the folder holding the pinned go.mod/go.sum), WORK, HINT (how long a
# first build takes) and NO_GO (what is lost without go), and defines installed().

# Exits the script when there is nothing to build (already installed, built meanwhile by a
# concurrent run, or no go); otherwise prepares $WORK/build.mod and build.sum, copies of the pinned
# files (builds use them through -modfile, so the tracked files never change).
go_tool_start() {
  if installed; then
    echo "$TAG: $BIN is already $VERSION"
    exit 0
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "$TAG: go not found; skipping the $WHAT build ($NO_GO)"
    exit 0
  fi
  mkdir -p "$ROOT/.tools/bin" "$ROOT/.tools/build"
  # Parallel runs may call this at once: one builds, the others wait and then find the binary.
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$ROOT/.tools/build/$(basename "$BIN").lock"
    flock 9
    if installed; then
      echo "$TAG: $BIN is already $VERSION (built by a concurrent run)"
      exit 0
    fi
  fi
  export GOFLAGS="-mod=mod -buildvcs=false"
  START=$SECONDS
  echo "$TAG: building $WHAT $VERSION with $(go version) into $BIN ($HINT)"
  rm -rf "$WORK"
  mkdir -p "$WORK"
  cp "$WRAPPER/go.mod" "$WORK/build.mod"
  cp "$WRAPPER/go.sum" "$WORK/build.sum"
}

# After the caller has built "$BIN.tmp": puts it in place and checks that it reports $VERSION.
go_tool_finish() {
  mv -f "$BIN.tmp" "$BIN"
  rm -rf "$WORK"
  if ! installed; then
    echo "$TAG: built $BIN but it does not report $VERSION:" >&2
    "$BIN" --version >&2 || true
    exit 1
  fi
  echo "$TAG: done in $((SECONDS - START)) s"
}
