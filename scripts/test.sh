#!/usr/bin/env bash
# `npm test`: install, run the whole vitest suite (contract checks, unit and end-to-end tests against
# a real server and database) and end with one line: `tests: N passed, M failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! bash scripts/install.sh; then
  echo "tests: 0 passed, 1 failed"
  exit 1
fi
# The console's browser test drives Debian's Chromium (no browser download).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing Debian's chromium for the console's browser test"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "test: could not install chromium; the console test will fail"
  else
    echo "test: chromium is missing and cannot be installed here (needs root and apt-get); the console test will fail"
  fi
fi
mkdir -p test-results
rm -f test-results/vitest.json
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
node scripts/summarize-tests.mjs test-results/vitest.json
