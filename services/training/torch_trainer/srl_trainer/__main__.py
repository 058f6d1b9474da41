"""`python -m srl_trainer --listen HOST:PORT`: the trainer process.

Binds the port itself (`--listen HOST:0`: any free one, no find-then-bind race), then prints one
line `LISTENING <port>` on stdout and, with `--port-file PATH`, writes the port to PATH (atomically:
the worker's supervisor reads it there), then logs to stderr. Threads: --threads, else
TRAINER_THREADS, else the CPUs this process may use. Device: --device, else TRAINER_DEVICE, else
cuda when available.

Security (auth.py): the shared secret comes from `--secret-file`, else the TRAINER_SECRET
environment variable (never argv: `ps` shows argv to every user); a trainer without one listens on
loopback only. `--tls-cert`/`--tls-key` (PEM) serve TLS, for trainers reached over a network.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

from .auth import is_loopback, load_secret


class JsonFormatter(logging.Formatter):
    """One JSON object per line, as the service's own logger writes them."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"level": record.levelname.lower(), "msg": record.getMessage(), "logger": record.name}
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def main() -> None:
    parser = argparse.ArgumentParser(prog="srl_trainer")
    parser.add_argument("--listen", default=os.environ.get("TRAINER_LISTEN", "127.0.0.1:0"))
    parser.add_argument("--threads", type=int, default=int(os.environ.get("TRAINER_THREADS", "0")))
    parser.add_argument("--device", default=os.environ.get("TRAINER_DEVICE", ""))
    parser.add_argument("--port-file", default="", help="write the bound port here once serving")
    parser.add_argument("--secret-file", default="", help="the shared secret's file (else TRAINER_SECRET)")
    parser.add_argument("--tls-cert", default="", help="PEM certificate chain: serve TLS")
    parser.add_argument("--tls-key", default="", help="PEM private key of --tls-cert")
    parser.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority by N (batch work on a machine that also serves)")
    args = parser.parse_args()
    if args.nice > 0:
        # Before torch starts its threads: they inherit the priority.
        os.nice(args.nice)

    # Checked before torch is imported: a refused start is quick and says why.
    try:
        secret = load_secret(args.secret_file or None)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    if secret is None and not is_loopback(args.listen):
        parser.error(f"--listen {args.listen} is not a loopback address: set TRAINER_SECRET (or --secret-file) so that only the service can call this trainer")
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    tls = (Path(args.tls_cert).read_bytes(), Path(args.tls_key).read_bytes()) if args.tls_cert else None

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    warnings.filterwarnings("ignore", category=FutureWarning)
    import torch  # imported after the arguments: --help stays fast

    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

    from .server import serve

    server, port = serve(args.listen, device, threads, secret=secret, tls=tls)
    if args.port_file:
        staging = f"{args.port_file}.{os.getpid()}.tmp"
        Path(staging).write_text(f"{port}\n")
        os.replace(staging, args.port_file)
    print(f"LISTENING {port}", flush=True)
    log = logging.getLogger("srl_trainer")
    log.info("serving on port %d (%s, %d threads, %s, %s)", port, device, threads, "TLS" if tls else "plaintext", "secret required" if secret else "no secret: loopback only")
    from .resources import device_summary

    log.info("memory: %s", device_summary(device))
    if tls is None and not is_loopback(args.listen):
        log.warning("serving plaintext on %s: the secret and the jobs cross the network unencrypted; use --tls-cert/--tls-key", args.listen)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=2).wait()


if __name__ == "__main__":
    main()
