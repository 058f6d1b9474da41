#!/usr/bin/env bash
# Installs the trainer's Python environment (PyTorch + transformers + PEFT, exactly as pinned in
# services/training/torch_trainer/requirements.lock) into a venv cached OUTSIDE the clone:
#   ${SRL_CACHE_DIR:-$HOME/.cache/srl}/trainer-venv-<16 hex of sha256(requirements.lock + `python3 --version`)>
# and points the stable link .cache/trainer-venv at it (the service and the tests run
# .cache/trainer-venv/bin/python unless TRAINER_PYTHON is set).
# A venv counts as installed only once its stamp file exists (written after pip install, pip check
# and an import check); one without the stamp is a half-finished install and is deleted and redone.
# Idempotent, non-interactive, safe under CI=true; a fraction of a second when already installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCK="$ROOT/services/training/torch_trainer/requirements.lock"
CACHE="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
LINK="$ROOT/.cache/trainer-venv"
STAMP_NAME=".srl-trainer-installed"
MIN_MINOR=11 # torch 2.15, numpy 2.4 and transformers 5.24 (requirements.lock) need Python >= 3.11

if [ ! -f "$LOCK" ]; then
  echo "install-trainer: $LOCK is missing" >&2
  exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "install-trainer: python3 not found on PATH; the trainer needs Python 3.$MIN_MINOR or newer (with its venv module)" >&2
  exit 1
fi
PYVER="$(python3 --version 2>&1 || true)"
if [[ ! "$PYVER" =~ ^Python\ 3\.([0-9]+) ]] || [ "${BASH_REMATCH[1]}" -lt "$MIN_MINOR" ]; then
  echo "install-trainer: python3 is '$PYVER' ($(command -v python3)); the trainer needs Python 3.$MIN_MINOR or newer" >&2
  echo "install-trainer: (torch, numpy and transformers as pinned in requirements.lock require it)" >&2
  exit 1
fi

KEY="$({ cat "$LOCK"; printf '%s\n' "$PYVER"; } | sha256sum | cut -c1-16)"
VENV="$CACHE/trainer-venv-$KEY"
STAMP="$VENV/$STAMP_NAME"

# shellcheck source=link-cached.sh
source "$ROOT/scripts/link-cached.sh"
# shellcheck source=venv-install.sh
source "$ROOT/scripts/venv-install.sh"
venv_reuse_or_lock install-trainer "$VENV" "$STAMP" "$KEY" "$LINK" "$CACHE/trainer-venv-$KEY.lock" "$PYVER"

START=$SECONDS
venv_fresh install-trainer "$VENV" "$PYVER" "the trainer's Python environment (PyTorch and its CUDA libraries: several GB, first time only)"

PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input)
venv_install_lock install-trainer "the trainer's Python environment" "$VENV" "$LOCK" "$CACHE/trainer-venv-$KEY.pip.log"

echo "install-trainer: pip check"
"${PIP[@]}" check
echo "install-trainer: checking that torch, transformers, peft, gguf, safetensors and grpc import"
"$VENV/bin/python" -c "import torch, transformers, peft, gguf, safetensors, numpy, grpc, grpc_tools, google.protobuf"

venv_stamp "$STAMP" "$KEY"
link_cached "$VENV" "$LINK"
echo "install-trainer: done in $((SECONDS - START)) s: $VENV (linked from .cache/trainer-venv)"

others="$(find "$CACHE" -maxdepth 1 -name 'trainer-venv-*' -type d ! -name "trainer-venv-$KEY" 2>/dev/null || true)"
if [ -n "$others" ]; then
  echo "install-trainer: note: older trainer environments remain (several GB each; delete them if no other checkout uses them):"
  printf '  %s\n' $others
fi
