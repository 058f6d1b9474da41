"""Versions this trainer runs with (Describe)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

TRAINER_VERSION = "0.2.0"


def versions() -> dict[str, str]:
    out = {"srl_trainer": TRAINER_VERSION}
    for package in ("torch", "transformers", "peft", "gguf"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "missing"
    return out
