#!/usr/bin/env bash
# `build-llama-server.sh [--variant native|noamx]`: builds llama.cpp's own server (llama-server)
# from the llama.cpp source that node-llama-cpp ships (node_modules/node-llama-cpp/llama/
# gitRelease.bundle), patched with patches/llama.cpp/*.diff: the same engine the service embeds, as
# the reference the inference benchmark compares against, and the binary remote engines are tested
# with. CPU only, for this CPU's instructions ("noamx": without AMX), only the llama-server target,
# on every core. Cached outside the clone keyed by the bundle's commit, the patches, the CPU and the
# variant. Prints the directory holding the binary as its last line; everything else goes to
# stderr. The install (services/inference/engine/llama/build-check/cli.ts) checks it on real models before linking it as .cache/llama-server.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cmake-tools.sh

variant=native
if [ "${1:-}" = "--variant" ]; then variant="${2:-}"; fi
flags="$(llama_variant_flags "$variant")"

commit="$(bundled_llama_commit build-llama-server)"
cache="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
target="$cache/llama-server-${commit:0:12}-p$(llama_patches_hash)-cpu$(cpu_key)-$variant"
mkdir -p "$cache"

if [ -x "$target/bin/llama-server" ]; then
  echo "$target/bin"
  exit 0
fi

exec 9>"$target.lock"
if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
  echo "build-llama-server: another process is building it; waiting" >&2
  flock 9
  if [ -x "$target/bin/llama-server" ]; then echo "$target/bin"; exit 0; fi
fi

ensure_cmake build-llama-server "$cache"

echo "build-llama-server: building llama-server ($variant) from node-llama-cpp's llama.cpp (${commit:0:12}, patched) on $(nproc) cores into $target; this takes several minutes once" >&2
work="$target.build"
rm -rf "$work"
git clone -q "$LLAMA_BUNDLE" "$work/src" 2>/dev/null
apply_llama_patches build-llama-server "$work/src"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# No web UI download, no HTTPS, no curl: nothing is fetched while building or serving.
cmake -S "$work/src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" >"$work/cmake.log" 2>&1 || { tail -n 30 "$work/cmake.log" >&2; exit 1; }

start=$SECONDS
compile_heartbeat build-llama-server "$work/build.log" &
heartbeat=$!
trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }
kill "$heartbeat" 2>/dev/null || true

rm -rf "$target"
mkdir -p "$target/bin"
cp "$work/build/bin/llama-server" "$target/bin/"
rm -rf "$work"
echo "build-llama-server: built in $((SECONDS - start)) s: $target/bin" >&2
echo "$target/bin"
