"""Who may call the trainer: every call carries `authorization: Bearer <secret>` (gRPC metadata),
compared in constant time; anything else is UNAUTHENTICATED before its handler runs, Describe
included (it tells versions, device and whether a job runs, and every caller that may see that
holds the secret anyway). Without a secret the trainer serves loopback only (the CLI refuses
anything else), as for tests that start one by hand."""

from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Any, Callable

import grpc

SECRET_ENV = "TRAINER_SECRET"
METADATA_KEY = "authorization"
# A secret shorter than this is a typo or a placeholder, not a credential.
MIN_SECRET_CHARS = 16


def load_secret(secret_file: str | None) -> str | None:
    """The shared secret: the file's first line, else TRAINER_SECRET, else None (no authentication)."""
    if secret_file:
        with open(secret_file, encoding="utf-8") as f:
            secret = f.readline().strip()
        if not secret:
            raise ValueError(f"the secret file {secret_file} is empty")
    else:
        secret = os.environ.get(SECRET_ENV, "").strip()
        if not secret:
            return None
    if len(secret) < MIN_SECRET_CHARS:
        raise ValueError(f"the trainer secret must be at least {MIN_SECRET_CHARS} characters")
    return secret


def is_loopback(address: str) -> bool:
    """Whether `HOST:PORT` (or `[v6]:PORT`) listens on this machine only."""
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name, "0.0.0.0" is an address; any other name may resolve anywhere


class SecretInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose `authorization` metadata is not `Bearer <secret>`."""

    def __init__(self, secret: str) -> None:
        self._expected = f"Bearer {secret}".encode()

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        given = next((value for key, value in details.invocation_metadata if key == METADATA_KEY), "")
        given_bytes = given if isinstance(given, bytes) else given.encode()
        if hmac.compare_digest(given_bytes, self._expected):
            return continuation(details)
        handler = continuation(details)
        return None if handler is None else _refusing(handler, "missing" if not given else "wrong")


def _refusing(handler: Any, what: str) -> Any:
    """A handler of the same shape as `handler` that aborts at once; the request stream is not read."""
    message = f"{what} trainer secret (send `{METADATA_KEY}: Bearer <secret>`)"

    def deny(_request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(deny)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(deny)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(deny)
    return grpc.unary_unary_rpc_method_handler(deny)
