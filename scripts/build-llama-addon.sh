#!/usr/bin/env bash
# Builds node-llama-cpp's native binary (llama-addon.node and its llama.cpp libraries) from the
# source node-llama-cpp ships, the way llama-server is built here (scripts/build-llama-server.sh):
# with OpenMP and this CPU's own instructions. node-llama-cpp's prebuilt binary has no OpenMP, so
# llama.cpp's threads wait for each other at every step of a decode by spinning; when another
# process (gateway, client) takes a core for a moment, the thread left running spins until it
# comes back. OpenMP's waits yield the core. Measured on 2 cores, SmolLM2, one stream, 2 threads:
# 44-127 tokens/s prebuilt, 124-136 built here; node-llama-cpp driven alone: 155 against 165-173.
#
# Built once per node-llama-cpp version, llama.cpp commit and CPU (its flags: the build uses them),
# cached outside the clone, and linked as node_modules/node-llama-cpp/llama/localBuilds/<platform>,
# which node-llama-cpp loads before its prebuilt binaries. Exits non-zero when it cannot build (the
# prebuilt binary then stays in use; the engine logs which one it loaded).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cmake-tools.sh
. scripts/link-cached.sh

commit="$(bundled_llama_commit build-llama-addon)"
package=node_modules/node-llama-cpp
version="$(node -p "require('./$package/package.json').version")"
platform="$(node -p "process.platform + '-' + process.arch")"
cpu="$( (uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) | sha256sum | cut -c1-8)"
cache="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
target="$cache/node-llama-cpp-$version-${commit:0:12}-cpu$cpu"
link="$package/llama/localBuilds/$platform"
mkdir -p "$cache"

built() { [ -f "$target/Release/llama-addon.node" ] && [ -f "$target/buildDone.status" ]; }
# What a build leaves in node_modules: the llama.cpp source and the build directory.
remove_build_files() { rm -rf "$link" "$package/llama/llama.cpp"; }

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
  echo "build-llama-addon: building node-llama-cpp $version's binary from its llama.cpp (${commit:0:12}, the bundled source) with OpenMP for this CPU into $target; this takes a few minutes once" >&2
  log="$cache/node-llama-cpp-build.log"
  remove_build_files
  start=$SECONDS
  compile_heartbeat build-llama-addon "$log" &
  heartbeat=$!
  trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
  # `source download` takes the release from the bundle when one is there (no network), then builds.
  if ! npx --no node-llama-cpp source download --gpu false --noUsageExample >"$log" 2>&1 || [ ! -f "$link/buildDone.status" ]; then
    kill "$heartbeat" 2>/dev/null || true
    tail -n 30 "$log" >&2
    remove_build_files
    echo "build-llama-addon: the build failed (log: $log)" >&2
    exit 1
  fi
  kill "$heartbeat" 2>/dev/null || true
  if ! grep -q '^GGML_OPENMP_ENABLED:INTERNAL=ON' "$link/CMakeCache.txt"; then
    echo "build-llama-addon: built without OpenMP (no OpenMP runtime for this compiler?); kept anyway, it is still built for this CPU" >&2
  fi
  # Keep only what node-llama-cpp loads; the sources and objects stay out of node_modules.
  rm -rf "$target.tmp"
  mkdir -p "$target.tmp"
  cp -r "$link/Release" "$link/buildDone.status" "$target.tmp/"
  rm -rf "$target"
  remove_build_files
  mv "$target.tmp" "$target"
  echo "build-llama-addon: built in $((SECONDS - start)) s: $target" >&2
fi
link_cached "$target" "$link"
echo "$target"
