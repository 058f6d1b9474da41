#!/usr/bin/env bash
# `npm start`: install what is missing, then run the service (embedded database and defaults unless
# the environment says otherwise; see the README's configuration table).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh >&2
exec node --import tsx services/app/main.ts
