#!/usr/bin/env bash
# Every install step the service and its tests need, idempotent, each phase timed: npm packages
# exactly as locked (npm ci, skipped when node_modules already matches package-lock.json and
# patches/), the small real model the checks, tests and benchmarks use (.cache/models/),
# node-llama-cpp's binary and llama-server built with OpenMP for this CPU from the patched bundled
# llama.cpp and each checked on real quantized models before it is used (a build that fails its
# check is replaced by one without AMX, then by node-llama-cpp's prebuilt binary;
# .cache/llama-binaries.json says which and why), the embedded database, the S3-compatible server
# the blob-store tests run against (versitygw, .tools/bin), the trainer's Python
# environment (PyTorch etc., cached outside the clone, linked from .cache/trainer-venv), the ART
# client's overlay on it for the wandb / ART tests (linked from .cache/art-client-venv), the other
# client environments of that test matrix (wandb 0.28.0; ART 0.5.23 with wandb 0.31.0 on the newest
# Python >= 3.12 found: .cache/clients/), the Tinker SDK's environments for the Tinker tests (SDK
# 0.38.0 with tinker-cookbook 0.6.1, and SDK 0.34.0; overlays on the trainer's, like the ART
# client's), ART 0.5.23 with its `tinker` extra for its TinkerNativeBackend (standalone, on the
# newest Python 3.12 found: torch and the CUDA libraries PyPI's torch brings, 3 GB to download the
# first time) and the web console's build.
set -euo pipefail
cd "$(dirname "$0")/.."

install_started=$SECONDS
# `phase NAME COMMAND...` runs one step and prints how long it took.
phase() {
  local name="$1" start=$SECONDS status=0
  shift
  "$@" || status=$?
  echo "install: $name took $((SECONDS - start)) s"
  return "$status"
}

npm_install() {
  # npm ci runs `patch-package` (postinstall), which applies patches/ to node_modules.
  local lock_hash stamp=node_modules/.installed-lock-hash
  lock_hash=$(cat package-lock.json patches/*.patch | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ]; then
    echo "install: npm ci (package-lock.json or patches/ changed, or node_modules missing)"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_hash" > "$stamp"
  fi
}

# llama.cpp for the engine (node-llama-cpp's binary) and llama-server: built once per CPU, checked,
# linked. Without a checked local build the engine runs on the prebuilt binary, slower; without
# llama-server the benchmark and the remote-engine tests cannot run.
llama_binary() {
  if ! node --import tsx services/inference/engine/llama/build-check/cli.ts "$1"; then
    echo "install: WARNING: no $1 build of llama.cpp passed its check (above; .cache/llama-binaries.json)"
  fi
}

phase "npm packages" npm_install
phase "test model" bash scripts/fetch-test-models.sh
phase "llama.cpp for the engine" llama_binary addon
phase "llama-server" llama_binary server
phase "embedded database" bash scripts/install-ferretdb.sh
phase "S3-compatible test server" bash scripts/install-s3-server.sh
phase "trainer environment" bash scripts/install-trainer.sh
phase "ART client environment" bash scripts/install-art-client.sh
phase "wandb 0.28.0 client environment" bash scripts/install-client-env.sh wandb-0.28.0
phase "ART 0.5.23 client environment" bash scripts/install-client-env.sh art-0.5.23
phase "Tinker SDK 0.38.0 + tinker-cookbook 0.6.1 client environment" bash scripts/install-client-env.sh tinker-0.38.0
phase "Tinker SDK 0.34.0 client environment" bash scripts/install-client-env.sh tinker-0.34.0
phase "ART 0.5.23 TinkerNativeBackend client environment" bash scripts/install-client-env.sh art-0.5.23-tinker
phase "Prometheus client 0.26.0 (the /metrics test's parser)" bash scripts/install-client-env.sh prometheus-client-0.26.0
phase "lm-evaluation-harness 0.4.13 client environment" bash scripts/install-client-env.sh lm-eval-0.4.13
# The web console's production build, served by the gateway at `/`.
phase "web console" npx --no-install vite build --config console/vite.config.ts --logLevel warn
echo "install: done in $((SECONDS - install_started)) s"
