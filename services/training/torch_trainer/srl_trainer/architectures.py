"""What the trainer knows per GGUF architecture: whether transformers loads it, the LoRA target
modules by default, how Hugging Face module names map to llama.cpp tensor names, and whether the
Q/K rows are permuted between the two layouts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import gguf
import numpy as np

# Hugging Face module names of the attention and MLP projections, per family. Phi-3 fuses q/k/v
# and gate/up into one module each, in transformers and in llama.cpp alike.
_DENSE = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_PHI3 = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


@dataclass(frozen=True)
class Architecture:
    gguf_name: str
    default_targets: tuple[str, ...]
    # llama.cpp's converter permutes the rows of q and k for "llama" GGUFs (its rope is the
    # interleaved one); transformers undoes it on load (LlamaTensorProcessor), so a LoRA B of
    # q_proj/k_proj must be permuted the same way when exported, and back when imported.
    permuted_qk: bool


SUPPORTED: dict[str, Architecture] = {
    a.gguf_name: a
    for a in (
        # Also Mistral's GGUFs: llama.cpp writes them as "llama" (transformers then builds a
        # MistralForCausalLM when general.name says mistral, still undoing the permutation).
        Architecture("llama", _DENSE, True),
        Architecture("qwen2", _DENSE, False),
        Architecture("qwen3", _DENSE, False),
        Architecture("gemma2", _DENSE, False),
        Architecture("gemma3", _DENSE, False),
        Architecture("phi3", _PHI3, False),
    )
}


def gguf_tensor_namer(arch: str, n_blocks: int) -> Callable[[str], str]:
    """HF module name ("model.layers.3.self_attn.q_proj") -> GGUF tensor base ("blk.3.attn_q")."""
    model_arch = next((k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch), None)
    if model_arch is None:
        raise ValueError(f"gguf does not know the architecture {arch!r}")
    names = gguf.get_tensor_name_map(model_arch, n_blocks)

    def name_of(module: str) -> str:
        found = names.get_name(module)
        if found is None:
            raise ValueError(f"no llama.cpp tensor corresponds to {module} in {arch}")
        return found

    return name_of


def permute_rows(weights: np.ndarray, n_head: int, n_head_kv: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf permute (HF rows -> GGUF rows)."""
    if n_head != n_head_kv:
        n_head = n_head_kv
    shape = weights.shape
    return weights.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def unpermute_rows(weights: np.ndarray, n_head: int, n_head_kv: int) -> np.ndarray:
    """The inverse (GGUF rows -> HF rows), as transformers' LlamaTensorProcessor."""
    if n_head != n_head_kv:
        n_head = n_head_kv
    shape = weights.shape
    return weights.reshape(n_head, shape[0] // n_head // 2, 2, *shape[1:]).swapaxes(1, 2).reshape(shape)
