# Sourced by the scripts that compile llama.cpp.

# The llama.cpp source node-llama-cpp ships (a git bundle): what both builds compile.
LLAMA_BUNDLE=node_modules/node-llama-cpp/llama/gitRelease.bundle

# `bundled_llama_commit NAME` prints the bundle's commit; fails when npm ci has not run.
bundled_llama_commit() {
  if [ ! -f "$LLAMA_BUNDLE" ]; then
    echo "$1: $LLAMA_BUNDLE is missing; run npm ci first" >&2
    return 1
  fi
  git bundle list-heads "$LLAMA_BUNDLE" | awk '$2 == "HEAD" { print $1 }'
}

# `ensure_cmake NAME CACHE` puts cmake (and ninja)
# on PATH, from PyPI (pinned, in an environment cached under CACHE) where the machine has no cmake.
# NAME prefixes what it prints.
ensure_cmake() {
  local name="$1" cache="$2"
  command -v cmake >/dev/null 2>&1 && return 0
  local tools="$cache/build-tools-cmake3.31.6"
  if [ ! -x "$tools/bin/cmake" ]; then
    echo "$name: no cmake on this machine; installing cmake 3.31.6 and ninja 1.11.1.4 from PyPI into $tools" >&2
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install -q cmake==3.31.6 ninja==1.11.1.4 >&2
  fi
  export PATH="$tools/bin:$PATH"
}

# `compile_heartbeat NAME LOG &` prints, every 30 s, how long the compile writing LOG has run and
# how many of its steps are done (kill it when the compile ends).
compile_heartbeat() {
  local name="$1" log="$2" start=$SECONDS
  exec 9>&-
  while sleep 30 >/dev/null 2>&1; do
    echo "$name: still compiling ($((SECONDS - start)) s; $(grep -c '^\[' "$log" 2>/dev/null || echo 0) steps done)" >&2
  done
}
