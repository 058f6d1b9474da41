"""Named model shapes, as transformers configs built in code (no hub access, no downloads). The
sizes are the published configs' (layers, widths, heads, vocabulary, tied embeddings); the weights
are random, which changes nothing in the cost of a training step. RoPE scaling (Llama-3's "llama3"
type) is left out: a GGUF keeps it as a rope_freqs tensor that transformers' GGUF loader does not
read back, and it costs nothing measurable."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Shape:
    name: str
    family: str  # the GGUF architecture and transformers model type: llama | qwen2 | qwen3
    about: str
    config: dict[str, Any] = field(default_factory=dict)  # transformers config fields (rope_theta apart)


def _llama(**overrides: Any) -> dict[str, Any]:
    # meta-llama/Llama-3.2-1B: ~1.24 B parameters, tied embeddings, GQA 32/8.
    base: dict[str, Any] = dict(
        vocab_size=128256,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        tie_word_embeddings=True,
        bos_token_id=128000,
        eos_token_id=128001,
    )
    return base | overrides


def _qwen(**overrides: Any) -> dict[str, Any]:
    # Qwen3-8B: ~8.2 B parameters, untied embeddings, GQA 32/8, q/k RMS norms (qwen3).
    base: dict[str, Any] = dict(
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        rms_norm_eps=1e-6,
        rope_theta=1000000.0,
        tie_word_embeddings=False,
        bos_token_id=151643,
        eos_token_id=151645,
    )
    return base | overrides


_TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=1024, bos_token_id=1, eos_token_id=2)

SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("llama-1b", "llama", "Llama-3.2-1B", _llama()),
        Shape("llama-8b", "llama", "Llama-3.1-8B", _llama(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, head_dim=128, tie_word_embeddings=False)),
        Shape("qwen3-8b", "qwen3", "Qwen3-8B", _qwen()),
        Shape("qwen3-32b", "qwen3", "Qwen3-32B", _qwen(hidden_size=5120, intermediate_size=25600, num_hidden_layers=64, num_attention_heads=64)),
        # Qwen2.5-32B (base): q/k/v carry biases in this family; 40 heads of 128 on a 5120 width.
        Shape("qwen2.5-32b", "qwen2", "Qwen2.5-32B", _qwen(vocab_size=152064, hidden_size=5120, intermediate_size=27648, num_hidden_layers=64, num_attention_heads=40, max_position_embeddings=131072, rms_norm_eps=1e-5, eos_token_id=151643)),
        # CPU tests: the same code paths in seconds. tiny is Llama; the others check the Qwen GGUFs.
        Shape("tiny", "llama", "tiny Llama (tests)", _llama(**_TINY)),
        Shape("tiny-qwen2", "qwen2", "tiny Qwen2 (tests)", _qwen(**_TINY)),
        # transformers' GGUF loader does not read qwen3's key_length: head_dim stays its default 128.
        Shape("tiny-qwen3", "qwen3", "tiny Qwen3 (tests)", _qwen(**(_TINY | {"head_dim": 128}))),
    )
}


def get_shape(name: str) -> Shape:
    try:
        return SHAPES[name]
    except KeyError:
        raise ValueError(f"unknown shape {name!r}; one of {', '.join(SHAPES)}") from None


def shape_fields(shape: Shape, layers: int | None = None) -> dict[str, Any]:
    """The shape's fields, with fewer layers when asked (a quick look at a wide model's cost)."""
    fields = dict(shape.config)
    if layers:
        fields["num_hidden_layers"] = layers
    return fields


def hf_config(shape: Shape, layers: int | None = None) -> Any:
    """The transformers config of the shape. transformers 5 takes RoPE as `rope_parameters`;
    older releases as `rope_theta`, which is passed there instead."""
    from transformers import LlamaConfig, Qwen2Config, Qwen3Config

    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[shape.family]
    fields = shape_fields(shape, layers)
    theta = fields.pop("rope_theta")
    if "rope_parameters" in inspect.signature(cls.__init__).parameters:
        fields["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    else:
        fields["rope_theta"] = theta
    if shape.family != "llama":
        fields["use_sliding_window"] = False  # full attention, as the published models run by default
    return cls(**fields)
