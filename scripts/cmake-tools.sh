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

# Patches applied to the bundled llama.cpp source before either build (patches/llama.cpp/*.diff;
# `.diff`, not `.patch`, so patch-package leaves them alone).
LLAMA_PATCHES_DIR=patches/llama.cpp

# `llama_patches_hash` prints a short hash of the patches: part of each build's cache key.
llama_patches_hash() {
  cat "$LLAMA_PATCHES_DIR"/*.diff | sha256sum | cut -c1-8
}

# `apply_llama_patches NAME DIR` applies every patch to the llama.cpp checkout in DIR.
apply_llama_patches() {
  local name="$1" dir="$2" patch
  for patch in "$LLAMA_PATCHES_DIR"/*.diff; do
    if ! git -C "$dir" apply --whitespace=nowarn "$(realpath "$patch")"; then
      echo "$name: $patch does not apply to $dir" >&2
      return 1
    fi
    echo "$name: applied $patch" >&2
  done
}

# `cpu_key` prints a short hash of this CPU's architecture and flags: builds for -march=native are
# cached per CPU, since another machine's CPU may lack (or add) instructions.
cpu_key() {
  (uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) | sha256sum | cut -c1-8
}

# `llama_variant_flags VARIANT` prints the extra compiler flags of a build variant: "native" is
# -march=native as it is; "noamx" is the same without AMX (the fallback where the AMX build fails
# its check). Explicit -mno-* flags win over -march=native in GCC and clang whatever their order.
llama_variant_flags() {
  case "$1" in
    native) echo "" ;;
    noamx) echo "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" ;;
    *) echo "unknown build variant $1 (native, noamx)" >&2; return 1 ;;
  esac
}
