#!/usr/bin/env bash
# Every install step the service and its tests need, idempotent: npm packages exactly as locked
# (npm ci, skipped when node_modules already matches package-lock.json and patches/),
# node-llama-cpp's binary built with OpenMP for this CPU, the embedded database, the trainer's
# Python environment (PyTorch etc., cached outside the clone, linked from .cache/trainer-venv), the
# ART client's overlay on it for the wandb / ART tests (linked from .cache/art-client-venv) and the
# small real model the tests and benchmarks use (.cache/models/).
set -euo pipefail
cd "$(dirname "$0")/.."

# npm ci runs `patch-package` (postinstall), which applies patches/ to node_modules.
lock_hash=$(cat package-lock.json patches/*.patch | sha256sum | cut -d' ' -f1)
stamp=node_modules/.installed-lock-hash
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ]; then
  echo "install: npm ci (package-lock.json or patches/ changed, or node_modules missing)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > "$stamp"
fi
# node-llama-cpp's binary with OpenMP, built for this CPU (cached outside the clone; npm ci removes
# the link, so it is made again after each). Without it the service still runs, on the prebuilt one.
if ! bash scripts/build-llama-addon.sh >/dev/null; then
  echo "install: WARNING: node-llama-cpp's OpenMP binary could not be built (above); the engine uses the prebuilt one, slower on several threads"
fi
bash scripts/install-ferretdb.sh
bash scripts/install-trainer.sh
bash scripts/install-art-client.sh
bash scripts/fetch-test-models.sh

# The web console's production build, served by the gateway at `/`.
npx --no-install vite build --config console/vite.config.ts --logLevel warn
