#!/usr/bin/env bash
# Every install step the service and its tests need, idempotent: npm packages exactly as locked
# (npm ci, skipped when node_modules already matches package-lock.json and patches/) and the embedded
# database.
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
bash scripts/install-ferretdb.sh

# The web console's production build, served by the gateway at `/`.
npx --no-install vite build --config console/vite.config.ts --logLevel warn
