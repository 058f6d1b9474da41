"""`python -m srl_trainer --listen HOST:PORT`: the trainer process.

Prints one line `LISTENING <port>` on stdout once it serves (useful with `--listen HOST:0`; the
worker's supervisor picks the port itself and polls Describe), then logs to stderr. Threads: --threads, else TRAINER_THREADS, else the CPUs this process may use.
Device: --device, else TRAINER_DEVICE, else cuda when available.
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
    args = parser.parse_args()

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

    server, port = serve(args.listen, device, threads)
    print(f"LISTENING {port}", flush=True)
    logging.getLogger("srl_trainer").info("serving on port %d (%s, %d threads)", port, device, threads)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=2).wait()


if __name__ == "__main__":
    main()
