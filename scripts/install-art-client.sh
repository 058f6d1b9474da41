#!/usr/bin/env bash
# Installs the ART client's Python environment for the wandb / ART tests (test/wandb/python): an
# overlay venv on top of the trainer's (scripts/install-trainer.sh), cached OUTSIDE the clone:
#   ${SRL_CACHE_DIR:-$HOME/.cache/srl}/art-client-venv-<16 hex of sha256(test/wandb/python/requirements.lock
#     + services/training/torch_trainer/requirements.lock + `python3 --version`)>
# and points the stable link .cache/art-client-venv at it. Its site-packages holds exactly
# test/wandb/python/requirements.lock (openpipe-art, litellm, wandb, openai, polars, ... and
# protobuf 6.x, which wandb 0.25.0 needs) plus a .pth file that appends the trainer venv's
# site-packages to sys.path after its own: torch, transformers, peft, gguf, pytest, ... come from
# the trainer's environment, and the overlay's own pins win where both have a package.
# A venv counts as installed only once its stamp file exists (written after pip install, the
# dependency check and an import check); one without the stamp is a half-finished install and is
# deleted and redone. Idempotent, non-interactive, safe under CI=true; a fraction of a second when
# already installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCK="$ROOT/test/wandb/python/requirements.lock"
TRAINER_LOCK="$ROOT/services/training/torch_trainer/requirements.lock"
TRAINER_LINK="$ROOT/.cache/trainer-venv"
CACHE="${SRL_CACHE_DIR:-$HOME/.cache/srl}"
LINK="$ROOT/.cache/art-client-venv"
STAMP_NAME=".srl-art-client-installed"
PTH_NAME="zz-srl-trainer-venv.pth" # processed after any other .pth of the overlay

for f in "$LOCK" "$TRAINER_LOCK"; do
  if [ ! -f "$f" ]; then
    echo "install-art-client: $f is missing" >&2
    exit 1
  fi
done
# The overlay lives on the trainer's environment: make sure it is there (a no-op when it is).
if ! "$TRAINER_LINK/bin/python" -c '' >/dev/null 2>&1; then
  bash "$ROOT/scripts/install-trainer.sh"
fi
TRAINER_VENV="$(readlink -f "$TRAINER_LINK")"
TRAINER_PY="$TRAINER_VENV/bin/python"
PYVER="$(python3 --version 2>&1 || true)"
TRAINER_PYVER="$("$TRAINER_PY" --version 2>&1 || true)"
if [ "$PYVER" != "$TRAINER_PYVER" ]; then
  echo "install-art-client: python3 is '$PYVER' but the trainer's environment ($TRAINER_VENV) runs '$TRAINER_PYVER';" >&2
  echo "install-art-client: run scripts/install-trainer.sh with the same python3 first (the overlay shares its site-packages)" >&2
  exit 1
fi
TRAINER_SITE="$("$TRAINER_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

KEY="$({ cat "$LOCK" "$TRAINER_LOCK"; printf '%s\n' "$PYVER"; } | sha256sum | cut -c1-16)"
VENV="$CACHE/art-client-venv-$KEY"
STAMP="$VENV/$STAMP_NAME"

# shellcheck source=link-cached.sh
source "$ROOT/scripts/link-cached.sh"
# shellcheck source=venv-install.sh
source "$ROOT/scripts/venv-install.sh"
venv_reuse_or_lock install-art-client "$VENV" "$STAMP" "$KEY" "$LINK" "$CACHE/art-client-venv-$KEY.lock" "$PYVER, on $TRAINER_VENV"

START=$SECONDS
venv_fresh install-art-client "$VENV" "$PYVER" "the ART client's Python environment (openpipe-art, wandb, litellm, ...: about 300 MB, first time only; torch etc. come from the trainer's)"
PY="$VENV/bin/python"
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PIP=("$PY" -m pip --disable-pip-version-check --no-input)

# The venv's bundled setuptools would hide the trainer's pinned one; the overlay adds nothing of
# its own there.
"${PIP[@]}" uninstall --yes --quiet setuptools >/dev/null 2>&1 || true
venv_install_lock install-art-client "the ART client's Python environment" "$VENV" "$LOCK" "$CACHE/art-client-venv-$KEY.pip.log"

# After the overlay's own site-packages (a .pth line is appended to sys.path), so its pins win.
# Written after pip install, so pip never sees (nor tries to replace) the trainer's packages.
printf '%s\n' "$TRAINER_SITE" >"$SITE/$PTH_NAME"

# pip check over what this environment imports: every distribution of the overlay and of the
# trainer's site-packages, the overlay's first (as sys.path has them), each one's requirements
# met by the version that wins. Known and reported, not failing: what the trainer's gRPC code
# generator wants of protobuf (7.x; the tests never import it next to wandb), and the declared
# dependencies that art-client.md leaves out on purpose (openpipe-art and litellm are installed
# --no-deps: weave, setproctitle, ... belong to ART's local GPU backend and tracing, not to
# ServerlessBackend; `import art` and the tests run without them).
echo "install-art-client: checking the requirements of every package against the versions that win on sys.path"
"$PY" - "$SITE" "$TRAINER_SITE" <<'EOF'
import sys
from importlib.metadata import distributions
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

overlay_site, trainer_site = sys.argv[1], sys.argv[2]
CONFLICT_OK = {("grpcio-tools", "protobuf")}
MISSING_OK = {
    ("openpipe-art", "weave"), ("openpipe-art", "nest-asyncio"), ("openpipe-art", "setproctitle"),
    ("openpipe-art", "tblib"), ("litellm", "importlib-metadata"), ("litellm", "jsonschema"),
}
winners = {}
for path in (overlay_site, trainer_site):
    for dist in distributions(path=[path]):
        winners.setdefault(canonicalize_name(dist.metadata["Name"]), (dist, path))
env = {"python_version": "%d.%d" % sys.version_info[:2], "extra": ""}
problems, tolerated = [], []
for name, (dist, path) in sorted(winners.items()):
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        found = winners.get(canonicalize_name(req.name))
        where = "overlay" if path == overlay_site else "trainer"
        pair = (name, canonicalize_name(req.name))
        if found is None:
            line = f"{name} {dist.version} ({where}) requires {req}, which is not installed"
            (tolerated if pair in MISSING_OK else problems).append(line)
        elif not req.specifier.contains(found[0].version, prereleases=True):
            line = f"{name} {dist.version} ({where}) requires {req}, but {found[0].version} wins"
            (tolerated if pair in CONFLICT_OK else problems).append(line)
for line in tolerated:
    print(f"install-art-client: note (expected): {line}")
if problems:
    print("install-art-client: unmet requirements:\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"install-art-client: {len(winners)} packages, requirements met")
EOF

echo "install-art-client: checking that art, wandb, litellm, openai, torch, peft, transformers, gguf and pytest import (and protobuf is the overlay's 6.x)"
LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_SILENT=true "$PY" - <<'EOF'
import google.protobuf, art, wandb, litellm, openai, torch, peft, transformers, gguf, safetensors, pytest
from art.serverless.backend import ServerlessBackend  # noqa: F401
major = int(google.protobuf.__version__.split(".")[0])
assert major < 7, f"protobuf {google.protobuf.__version__} (the trainer's?) wins over the overlay's 6.x"
assert wandb.__version__ == "0.25.0", wandb.__version__
EOF

venv_stamp "$STAMP" "$KEY"
link_cached "$VENV" "$LINK"
echo "install-art-client: done in $((SECONDS - START)) s: $VENV (linked from .cache/art-client-venv)"

others="$(find "$CACHE" -maxdepth 1 -name 'art-client-venv-*' -type d ! -name "art-client-venv-$KEY" 2>/dev/null || true)"
if [ -n "$others" ]; then
  echo "install-art-client: note: older ART client environments remain (delete them if no other checkout uses them):"
  printf '  %s\n' $others
fi
