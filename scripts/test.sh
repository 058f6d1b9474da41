#!/usr/bin/env bash
# `npm test`: install, run the whole vitest suite (contract checks, unit and end-to-end tests against
# a real server and database) and end with one line: `tests: N passed, M failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! bash scripts/install.sh; then
  echo "tests: 0 passed, 1 failed"
  exit 1
fi
mkdir -p test-results
rm -f test-results/vitest.json
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
node scripts/summarize-tests.mjs test-results/vitest.json
