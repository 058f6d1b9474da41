#!/usr/bin/env bash
# `build-llama-addon.sh [--variant native|noamx]`: builds node-llama-cpp's native binary
# (llama-addon.node and its llama.cpp libraries) from the source node-llama-cpp ships, patched with
# patches/llama.cpp/*.diff, the way llama-server is built here (scripts/build-llama-server.sh): with
# OpenMP and this CPU's own instructions ("noamx": without AMX). node-llama-cpp's prebuilt binary
# has no OpenMP, so llama.cpp's threads wait for each other at every step of a decode by spinning;
# when another process (gateway, client) takes a core for a moment, the thread left running spins
# until it comes back. OpenMP's waits yield the core. Measured on 2 cores, SmolLM2, one stream,
# 2 threads: 44-127 tokens/s prebuilt, 124-136 built here; node-llama-cpp driven alone: 155 against
# 165-173.
#
# Built once per node-llama-cpp version, llama.cpp commit, patches, CPU (its flags: the build uses
# them) and variant, cached outside the clone. Prints the build's directory as its last line; it is
# not used until it passes its check: the install (services/inference/engine/llama/build-check/cli.ts) verifies it on real models and links
# the first build that passes. Exits non-zero when it cannot build.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cmake-tools.sh

variant=native
if [ "${1:-}" = "--variant" ]; then variant="${2:-}"; fi
flags="$(llama_variant_flags "$variant")"

commit="$(bundled_llama_commit build-llama-addon)"
package=node_modules/node-llama-cpp
version="$(node -p "require('./$package/package.json').version")"
platform="$(node -p "process.platform + '-' + process.arch")"
cache="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
target="$cache/node-llama-cpp-$version-${commit:0:12}-p$(llama_patches_hash)-cpu$(cpu_key)-$variant"
# Where node-llama-cpp builds (and loads a local build from).
build_dir="$package/llama/localBuilds/$platform"
mkdir -p "$cache"

built() { [ -f "$target/Release/llama-addon.node" ] && [ -f "$target/buildDone.status" ]; }
# What a build leaves in node_modules: the llama.cpp source and the build directory.
remove_build_files() { rm -rf "$build_dir" "$package/llama/llama.cpp"; }

if ! built; then
  exec 9>"$target.lock"
  if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
    echo "build-llama-addon: another process is building it; waiting" >&2
    flock 9
  fi
fi
if ! built; then
  ensure_cmake build-llama-addon "$cache"
  # cmake-js needs Node's headers: the ones installed with Node, never a download.
  prefix="$(dirname "$(dirname "$(node -p process.execPath)")")"
  if [ -z "${npm_config_nodedir:-}" ] && [ "$(npm config get nodedir 2>/dev/null)" = "undefined" ] && [ -f "$prefix/include/node/node.h" ]; then
    export npm_config_nodedir="$prefix"
  fi
  echo "build-llama-addon: building node-llama-cpp $version's binary ($variant) from its llama.cpp (${commit:0:12}, the bundled source, patched) with OpenMP for this CPU into $target; this takes a few minutes once" >&2
  log="$cache/node-llama-cpp-build-$variant.log"
  remove_build_files
  start=$SECONDS
  fail() {
    kill "${heartbeat:-}" 2>/dev/null || true
    tail -n 30 "$log" >&2
    remove_build_files
    echo "build-llama-addon: $1 (log: $log)" >&2
    exit 1
  }
  # `source download` takes the release from the bundle when one is there (no network).
  npx --no node-llama-cpp source download --skipBuild --noUsageExample >"$log" 2>&1 || fail "could not unpack the bundled llama.cpp source"
  apply_llama_patches build-llama-addon "$package/llama/llama.cpp" 2>>"$log" || fail "a patch did not apply"
  compile_heartbeat build-llama-addon "$log" &
  heartbeat=$!
  trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
  # CMake takes CFLAGS/CXXFLAGS as the first value of CMAKE_C(XX)_FLAGS.
  CFLAGS="${CFLAGS:-} $flags" CXXFLAGS="${CXXFLAGS:-} $flags" \
    npx --no node-llama-cpp source build --gpu false --noUsageExample >>"$log" 2>&1 || fail "the build failed"
  [ -f "$build_dir/buildDone.status" ] || fail "the build left no binary"
  kill "$heartbeat" 2>/dev/null || true
  if [ -n "$flags" ] && ! grep -q -- "^CMAKE_CXX_FLAGS:STRING=.*$flags" "$build_dir/CMakeCache.txt"; then
    fail "the $variant flags ($flags) did not reach the compiler"
  fi
  if ! grep -q '^GGML_OPENMP_ENABLED:INTERNAL=ON' "$build_dir/CMakeCache.txt"; then
    echo "build-llama-addon: built without OpenMP (no OpenMP runtime for this compiler?); kept anyway, it is still built for this CPU" >&2
  fi
  # Keep only what node-llama-cpp loads; the sources and objects stay out of node_modules.
  rm -rf "$target.tmp"
  mkdir -p "$target.tmp"
  cp -r "$build_dir/Release" "$build_dir/buildDone.status" "$target.tmp/"
  rm -rf "$target"
  remove_build_files
  mv "$target.tmp" "$target"
  echo "build-llama-addon: built in $((SECONDS - start)) s: $target" >&2
fi
echo "$target"
