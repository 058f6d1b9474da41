"""The benchmark's child processes: their environment, and running one to its end with its output
kept in a log (the model build, the plain loop)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

TRAINER_ROOT = Path(__file__).resolve().parents[2]  # services/training/torch_trainer


def child_env() -> dict[str, str]:
    """The children's environment: the trainer package importable, no hub, no secret (the server
    listens on loopback only and the client sends none)."""
    env = dict(os.environ)
    env.pop("TRAINER_SECRET", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TRAINER_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_PROGRESS_BARS="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    return env


def run_child(command: list[str], log_path: Path, timeout: float) -> int:
    """Runs a child, its output relayed to our stderr (progress) and kept in its log."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=child_env())

        def relay() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                log.flush()
                if line.lstrip().startswith((b"plain", b"Traceback")) or b"Error" in line:
                    sys.stderr.write(line.decode(errors="replace"))
                    sys.stderr.flush()

        reader = threading.Thread(target=relay, daemon=True)
        reader.start()
        killed = False
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            code, killed = process.wait(), True
        finally:
            if process.poll() is None:  # we are being stopped (SIGTERM, Ctrl-C): the child goes too
                process.kill()
                process.wait()
        reader.join(timeout=10)
        if killed:
            log.write(f"\n[bench] killed after {timeout:.0f} s\n".encode())
        return code
