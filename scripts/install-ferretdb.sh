#!/usr/bin/env bash
# Builds the pinned FerretDB into .tools/bin/ferretdb for the embedded store
# (services/store/launcher.ts). Idempotent, non-interactive, safe under CI=true.
set -euo pipefail

VERSION="v1.24.2"
MODULE="github.com/FerretDB/FerretDB"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin/ferretdb"
WRAPPER="$ROOT/tools/ferretdb"
WORK="$ROOT/.tools/build/ferretdb"

installed() {
  # Capture first: `ferretdb --version | grep -q` can die of SIGPIPE, which
  # pipefail would report as a mismatch.
  local out
  [ -x "$BIN" ] && out="$("$BIN" --version 2>/dev/null)" && grep -qx "version: $VERSION" <<<"$out"
}

if installed; then
  echo "install-ferretdb: $BIN is already $VERSION"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "install-ferretdb: go not found; skipping FerretDB build (the store launcher falls back to other databases)"
  exit 0
fi

mkdir -p "$ROOT/.tools/bin" "$ROOT/.tools/build"

# Parallel test workers may call this at once: one builds, the others wait and
# then find the binary in place.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ROOT/.tools/build/ferretdb.lock"
  flock 9
  if installed; then
    echo "install-ferretdb: $BIN is already $VERSION (built by a concurrent run)"
    exit 0
  fi
fi

export GOFLAGS="-mod=mod -buildvcs=false"
START=$SECONDS
echo "install-ferretdb: building FerretDB $VERSION with $(go version) into $BIN (first build takes a minute or two)"

rm -rf "$WORK"
mkdir -p "$WORK"

# Work on copies of go.mod/go.sum (-modfile) so the tracked files never change.
cp "$WRAPPER/go.mod" "$WORK/build.mod"
cp "$WRAPPER/go.sum" "$WORK/build.sum"
cd "$WRAPPER"
go mod download -modfile="$WORK/build.mod" "$MODULE"
MODDIR="$(go list -modfile="$WORK/build.mod" -m -f '{{.Dir}}' "$MODULE")"

# FerretDB panics at start unless build/version/version.txt exists, and the
# module zip does not ship it (its release pipeline generates it). The module
# cache is read-only and -overlay refuses files in it, so build from a copy
# that has the file, wired in with a replace directive.
SRC="$WORK/FerretDB@$VERSION"
cp -R "$MODDIR" "$SRC"
chmod -R u+w "$SRC"
echo "$VERSION" >"$SRC/build/version/version.txt"
go mod edit -modfile="$WORK/build.mod" -replace="$MODULE=$SRC"

go build -modfile="$WORK/build.mod" -o "$BIN.tmp" "$MODULE/cmd/ferretdb"
mv -f "$BIN.tmp" "$BIN"
rm -rf "$WORK"

if ! installed; then
  echo "install-ferretdb: built $BIN but it does not report $VERSION:" >&2
  "$BIN" --version >&2 || true
  exit 1
fi
echo "install-ferretdb: done in $((SECONDS - START)) s"
