#!/usr/bin/env bash
# `npm test`: install, run the whole vitest suite (contract checks, unit and end-to-end tests against
# a real server and database), then the trainer's pytest suite, then the wandb / ART client tests
# (pytest in the ART client's environment against a server of their own), and end with one line
# over all three: `tests: N passed, M failed`. Arguments go to vitest only.
set -uo pipefail
cd "$(dirname "$0")/.."
test_started=$SECONDS
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
rm -f test-results/vitest.json test-results/pytest.xml test-results/pytest-wandb.xml
phase_started=$SECONDS
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
echo "test: vitest took $((SECONDS - phase_started)) s"
phase_started=$SECONDS
# The trainer's Python tests, with the environment scripts/install-trainer.sh made (or TRAINER_PYTHON).
trainer_python="${TRAINER_PYTHON:-.cache/trainer-venv/bin/python}"
echo "test: pytest services/training/torch_trainer/tests with $trainer_python"
"$trainer_python" -m pytest services/training/torch_trainer/tests -q --junitxml=test-results/pytest.xml
# The real wandb SDK and ART client (scripts/install-art-client.sh: the trainer's environment plus
# the client's packages) against the service: test/wandb/python/conftest.py starts its own server.
art_python=".cache/art-client-venv/bin/python"
echo "test: pytest test/wandb/python with $art_python"
"$art_python" -m pytest test/wandb/python -q --junitxml=test-results/pytest-wandb.xml
echo "test: pytest took $((SECONDS - phase_started)) s; install and tests $((SECONDS - test_started)) s in all"
node scripts/summarize-tests.mjs test-results/vitest.json test-results/pytest.xml test-results/pytest-wandb.xml
