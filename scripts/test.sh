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
rm -f test-results/vitest.json test-results/pytest*.xml test-results/pytest*.log test-results/client-reports.txt
phase_started=$SECONDS
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
echo "test: vitest took $((SECONDS - phase_started)) s"
phase_started=$SECONDS
# Then the trainer's Python tests (the environment scripts/install-trainer.sh made, or TRAINER_PYTHON)
# and the client matrix: one pytest run per client environment, each against a server of its own
# (test/support/python/srl_pytest_server.py):
# - ART 0.5.18 with wandb 0.25.0 (scripts/install-art-client.sh, on the trainer's environment),
#   wandb 0.28.0 alone (the plain W&B script tests) and ART 0.5.23 with wandb 0.31.0
#   (scripts/install-client-env.sh: standalone, on the newest Python >= 3.12): test/wandb/python;
# - the Tinker SDK 0.38.0 with tinker-cookbook 0.6.1, the SDK 0.34.0 (ART 0.5.23's pin) and ART
#   0.5.23's TinkerNativeBackend (openpipe-art[tinker], standalone on Python 3.12): test/tinker/python;
# - lm-evaluation-harness 0.4.13 (an overlay on the trainer's environment): test/evals/python.
# They run in two lanes at once: a client run keeps about two thirds of a core busy (its client,
# server and engines), so two share the 2 cores. A line says when each run starts; its whole
# output is printed when it ends, never mixed with the other lane's.
trainer_python="${TRAINER_PYTHON:-.cache/trainer-venv/bin/python}"
print_whole() { # LOG: printed in one piece (the other lane may be printing too)
  if command -v flock >/dev/null 2>&1; then flock test-results/.print-lock cat "$1"; else cat "$1"; fi
}
logged_pytest() { # NAME PYTHON TESTS...: pytest in the lane, its output to test-results/NAME.log
  local name="$1" python="$2" report="test-results/$1.xml" log="test-results/$1.log"
  shift 2
  if [ "$name" = pytest ]; then unset SRL_CLIENT_ENV; else export SRL_CLIENT_ENV="${name#pytest-}"; fi
  local what="pytest $* with $python"
  [ -z "${SRL_CLIENT_ENV:-}" ] || what="pytest $* with the $SRL_CLIENT_ENV client environment ($python)"
  echo "test: started $what"
  local started=$SECONDS
  { echo "test: $what"; "$python" -m pytest "$@" -q --junitxml="$report"; echo "test: $what took $((SECONDS - started)) s"; } >"$log" 2>&1
  print_whole "$log"
}
client_tests() { # NAME PYTHON TESTS...: skipped, and said so, where the environment is missing
  local name="$1"
  if [ -f ".cache/clients/$name.missing" ]; then
    echo "test: NOT RUN: the $name client tests: $(cat ".cache/clients/$name.missing")"
    return
  fi
  shift
  # Its report counts even if the run leaves none (then as a failure). One short line per append.
  echo "test-results/pytest-$name.xml" >>test-results/client-reports.txt
  (logged_pytest "pytest-$name" "$@")
}
(
  logged_pytest pytest "$trainer_python" services/training/torch_trainer/tests
  client_tests art-0.5.18 .cache/art-client-venv/bin/python test/wandb/python
  client_tests art-0.5.23 .cache/clients/art-0.5.23/bin/python test/wandb/python
) &
first_lane=$!
(
  client_tests tinker-0.38.0 .cache/clients/tinker-0.38.0/bin/python test/tinker/python
  # SDK 0.34 differs from 0.38 in how it makes training clients and resumes them: those tests run
  # again with it (every file passes with it too; the rest are left to the 0.38 run for time).
  client_tests tinker-0.34.0 .cache/clients/tinker-0.34.0/bin/python test/tinker/python/test_tinker_basics.py test/tinker/python/test_tinker_sft.py test/tinker/python/test_tinker_checkpoints.py
  # The file is skipped in the other environments.
  client_tests art-0.5.23-tinker .cache/clients/art-0.5.23-tinker/bin/python test/tinker/python/test_art_tinker_native.py
  client_tests wandb-0.28.0 .cache/clients/wandb-0.28.0/bin/python test/wandb/python/test_wandb_script.py test/wandb/python/test_wandb_reads.py test/wandb/python/test_wandb_artifact_sizes.py
  # lm-eval 0.4.13 offline on local tasks against SmolLM2 (the service's tokenizer endpoints).
  client_tests lm-eval-0.4.13 .cache/clients/lm-eval-0.4.13/bin/python test/evals/python
) &
second_lane=$!
wait "$first_lane" "$second_lane"
client_reports=()
[ ! -f test-results/client-reports.txt ] || mapfile -t client_reports <test-results/client-reports.txt
echo "test: pytest took $((SECONDS - phase_started)) s; install and tests $((SECONDS - test_started)) s in all"
node scripts/summarize-tests.mjs test-results/vitest.json test-results/pytest.xml "${client_reports[@]}"
