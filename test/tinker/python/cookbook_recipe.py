"""Runs one of tinker-cookbook's recipes as `python -m tinker_cookbook.recipes.NAME key=value ...`
does (its own module, run as __main__: chz parses the arguments and calls its main), unmodified,
with two look-ups answered locally, the only things this launcher changes:

1. datasets.load_dataset(NAME, ...) for a Hub dataset the recipe hard-codes (sl_loop:
   "HuggingFaceH4/no_robots", rl_loop: "openai/gsm8k", "main") gives
   datasets.load_dataset("json", data_files={"train": FILE}) instead: a local JSON Lines file of
   the same columns (SRL_RECIPE_DATASETS = {"NAME": "FILE", ...}; any other name goes through).
2. tinker_cookbook.model_info.get_recommended_renderer_name(MODEL) for a base model of this service
   (SRL_RECIPE_RENDERERS = {"MODEL": "RENDERER", ...}): sl_loop and rl_loop take no renderer
   argument and look the renderer up in the cookbook's registry of `org/model` names, which does
   not know the service's names (it raises ValueError for "tiny-chat"); any other name goes through.

At exit it writes what happened to SRL_RECIPE_REPORT (JSON): the datasets and renderers it
answered, and the tml_renderers modules the recipe imported (tinker-cookbook 0.6.1 requires
tml-renderers>=0.4.1, which PyPI does not have; the environment has 0.2.1).

    python cookbook_recipe.py tinker_cookbook.recipes.sl_loop model_name=tiny-chat batch_size=8 ...
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
from typing import Any

import datasets
from tinker_cookbook import model_info

LOCAL_DATASETS: dict[str, str] = json.loads(os.environ.get("SRL_RECIPE_DATASETS", "{}"))
RENDERERS: dict[str, str] = json.loads(os.environ.get("SRL_RECIPE_RENDERERS", "{}"))
REPORT: dict[str, Any] = {"datasets": [], "renderers": [], "tml_renderers_modules": None}

_load_dataset = datasets.load_dataset
_recommended_renderer = model_info.get_recommended_renderer_name


def load_dataset(path: str, *args: Any, **kwargs: Any) -> Any:
    if path in LOCAL_DATASETS:
        REPORT["datasets"].append({"name": path, "args": list(args), "file": LOCAL_DATASETS[path]})
        return _load_dataset("json", data_files={"train": LOCAL_DATASETS[path]})
    return _load_dataset(path, *args, **kwargs)


def get_recommended_renderer_name(model_name: str) -> str:
    if model_name in RENDERERS:
        REPORT["renderers"].append({"model": model_name, "renderer": RENDERERS[model_name]})
        return RENDERERS[model_name]
    return _recommended_renderer(model_name)


def write_report() -> None:
    REPORT["tml_renderers_modules"] = sorted(
        name for name in sys.modules if name == "tml_renderers" or name.startswith("tml_renderers.")
    )
    path = os.environ.get("SRL_RECIPE_REPORT")
    if path:
        with open(path, "w") as report:
            json.dump(REPORT, report)


datasets.load_dataset = load_dataset
model_info.get_recommended_renderer_name = get_recommended_renderer_name
atexit.register(write_report)

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: cookbook_recipe.py MODULE [key=value ...]")
    module = sys.argv.pop(1)
    # As `python -m MODULE ARGS`: sys.argv[0] becomes the module's file, chz reads sys.argv[1:].
    runpy.run_module(module, run_name="__main__", alter_sys=True)
