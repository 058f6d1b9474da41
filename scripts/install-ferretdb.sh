#!/usr/bin/env bash
# Builds the pinned FerretDB into .tools/bin/ferretdb for the embedded store
# (services/store/launcher.ts). Idempotent, non-interactive, safe under CI=true.
set -euo pipefail

TAG="install-ferretdb"
WHAT="FerretDB"
VERSION="v1.24.2"
MODULE="github.com/FerretDB/FerretDB"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin/ferretdb"
WRAPPER="$ROOT/tools/ferretdb"
WORK="$ROOT/.tools/build/ferretdb"
HINT="first build takes a minute or two"
NO_GO="the store launcher falls back to other databases"
# shellcheck source=go-tool.sh
source "$ROOT/scripts/go-tool.sh"

installed() {
  # Capture first: `ferretdb --version | grep -q` can die of SIGPIPE, which pipefail would report as
  # a mismatch.
  local out
  [ -x "$BIN" ] && out="$("$BIN" --version 2>/dev/null)" && grep -qx "version: $VERSION" <<<"$out"
}

go_tool_start
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
go_tool_finish
