#!/usr/bin/env bash
# Builds the pinned Versity S3 Gateway (versitygw, an S3-compatible server onto a POSIX directory)
# into .tools/bin/versitygw for the S3 blob-store tests (test/support/s3-server.ts). Idempotent,
# non-interactive, safe under CI=true; without go it prints why and exits 0 (those tests then fail
# with a message naming this script).
set -euo pipefail

TAG="install-s3-server"
WHAT="versitygw"
VERSION="v1.8.0"
MODULE="github.com/versity/versitygw"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin/versitygw"
WRAPPER="$ROOT/tools/s3-server"
WORK="$ROOT/.tools/build/versitygw"
HINT="takes about a minute the first time"
NO_GO="the S3 blob-store tests need it"
# shellcheck source=go-tool.sh
source "$ROOT/scripts/go-tool.sh"

installed() {
  # Capture first: `versitygw --version | grep -q` can die of SIGPIPE, which pipefail would report
  # as a mismatch. It prints "Version  : v1.8.0" (then build and commit lines).
  local out
  [ -x "$BIN" ] && out="$("$BIN" --version 2>/dev/null)" && grep -qE "^Version *: *$VERSION\$" <<<"$out"
}

go_tool_start
cd "$WRAPPER"
# The version, build time and commit `versitygw --version` prints are set at link time (its
# Makefile does the same; without them it prints "git"); the module zip has no commit to name.
go build -modfile="$WORK/build.mod" \
  -ldflags "-X=main.Version=$VERSION -X=main.Build=module -X=main.BuildTime=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -o "$BIN.tmp" "$MODULE/cmd/versitygw"
go_tool_finish
