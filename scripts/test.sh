#!/usr/bin/env bash
# `npm test`: install, run the whole vitest suite (contract checks, unit and end-to-end tests against
# a real server and database), then the trainer's pytest suite, then the wandb / ART client matrix
# (pytest in each client's environment against a server of their own), and end with one line over
# all of them: `tests: N passed, M failed`. Arguments go to vitest only.
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
rm -f test-results/vitest.json test-results/pytest*.xml
phase_started=$SECONDS
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
echo "test: vitest took $((SECONDS - phase_started)) s"
phase_started=$SECONDS
# The trainer's Python tests, with the environment scripts/install-trainer.sh made (or TRAINER_PYTHON).
trainer_python="${TRAINER_PYTHON:-.cache/trainer-venv/bin/python}"
echo "test: pytest services/training/torch_trainer/tests with $trainer_python"
"$trainer_python" -m pytest services/training/torch_trainer/tests -q --junitxml=test-results/pytest.xml
# The client matrix (test/wandb/python; conftest.py starts a server of its own for each run), one
# pytest run per client environment: ART 0.5.18 with wandb 0.25.0 (scripts/install-art-client.sh,
# on the trainer's environment), wandb 0.28.0 alone (the plain W&B script tests) and ART 0.5.23
# with wandb 0.31.0 (scripts/install-client-env.sh: standalone, on the newest Python >= 3.12); then
# the Tinker tests (test/tinker/python, their own server) with the Tinker SDK 0.38.0 and
# tinker-cookbook 0.6.1, then with the SDK 0.34.0 (ART 0.5.23's pin; the cookbook tests skip
# there), each an overlay on the trainer's environment.
client_reports=()
client_tests() { # NAME PYTHON TESTS...
  local name="$1" python="$2" missing=".cache/clients/$1.missing"
  shift 2
  if [ -f "$missing" ]; then
    echo "test: NOT RUN: the $name client tests: $(cat "$missing")"
    return
  fi
  echo "test: pytest $* with the $name client environment ($python)"
  SRL_CLIENT_ENV="$name" "$python" -m pytest "$@" -q --junitxml="test-results/pytest-$name.xml"
  client_reports+=("test-results/pytest-$name.xml")
}
client_tests art-0.5.18 .cache/art-client-venv/bin/python test/wandb/python
client_tests wandb-0.28.0 .cache/clients/wandb-0.28.0/bin/python test/wandb/python/test_wandb_script.py test/wandb/python/test_wandb_reads.py test/wandb/python/test_wandb_artifact_sizes.py
client_tests art-0.5.23 .cache/clients/art-0.5.23/bin/python test/wandb/python
client_tests tinker-0.38.0 .cache/clients/tinker-0.38.0/bin/python test/tinker/python
# SDK 0.34 differs from 0.38 in how it makes training clients and resumes them: those tests run
# again with it (every file passes with it too; the rest are left to the 0.38 run for time).
client_tests tinker-0.34.0 .cache/clients/tinker-0.34.0/bin/python test/tinker/python/test_tinker_basics.py test/tinker/python/test_tinker_sft.py test/tinker/python/test_tinker_checkpoints.py
# ART 0.5.23's TinkerNativeBackend (register, sample, train, sample the new step) in its own
# environment: openpipe-art[tinker]==0.5.23, standalone on the newest Python 3.12 (the file is
# skipped in the other environments).
client_tests art-0.5.23-tinker .cache/clients/art-0.5.23-tinker/bin/python test/tinker/python/test_art_tinker_native.py
echo "test: pytest took $((SECONDS - phase_started)) s; install and tests $((SECONDS - test_started)) s in all"
node scripts/summarize-tests.mjs test-results/vitest.json test-results/pytest.xml "${client_reports[@]}"
