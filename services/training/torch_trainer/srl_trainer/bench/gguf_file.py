"""The GGUF beside the safetensors directory. The trainer always reads a base model's GGUF (its
header: architecture, heads, blocks, tensor types; and, for the adapter it returns, llama.cpp's
tensor names and the Q/K layout), and reads the weights from it only when no `train_weights` is
given. Written with gguf-py as llama.cpp's convert_hf_to_gguf lays it out: matrices F16, norms and
biases F32, "llama" Q/K rows permuted.

`weights=False` writes the true header (every tensor's name, shape and type) over a sparse, all-zero
data region: the file has the full model's size but takes no disk and no time, which is what a 32B
shape needs beside its 64 GB of safetensors. It must never be loaded for its weights; the benchmark
always names `train_weights`. `weights=True` writes the real weights (loadable by transformers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import gguf
import numpy as np

from ..architectures import SUPPORTED, permute_rows


def _tensor_name(names: Any, hf_name: str) -> str:
    found = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
    if found is None:
        raise ValueError(f"no llama.cpp tensor name for {hf_name}")
    return str(found)


def _add_metadata(writer: gguf.GGUFWriter, fields: Mapping[str, Any], name: str, family: str) -> None:
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_vocab_size(fields["vocab_size"])
    writer.add_context_length(fields["max_position_embeddings"])
    writer.add_embedding_length(fields["hidden_size"])
    writer.add_block_count(fields["num_hidden_layers"])
    writer.add_feed_forward_length(fields["intermediate_size"])
    writer.add_head_count(fields["num_attention_heads"])
    writer.add_head_count_kv(fields["num_key_value_heads"])
    writer.add_key_length(fields["head_dim"])  # convert_hf_to_gguf writes it whenever the config has head_dim
    writer.add_value_length(fields["head_dim"])
    if family == "llama":
        writer.add_rope_dimension_count(fields["head_dim"])
    writer.add_layer_norm_rms_eps(fields["rms_norm_eps"])
    writer.add_rope_freq_base(fields["rope_theta"])
    writer.add_bos_token_id(fields["bos_token_id"])
    writer.add_eos_token_id(fields["eos_token_id"])


def write_gguf(path: Path, family: str, fields: Mapping[str, Any], state: Mapping[str, Any], name: str, weights: bool) -> int:
    """Writes the GGUF of a model's state dict (torch tensors, any device); returns its size."""
    arch = SUPPORTED[family]
    model_arch = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == family)
    names = gguf.get_tensor_name_map(model_arch, fields["num_hidden_layers"])
    writer = gguf.GGUFWriter(str(path), family)
    _add_metadata(writer, fields, name, family)
    n_head, n_head_kv = fields["num_attention_heads"], fields["num_key_value_heads"]
    data_bytes = 0
    for hf_name, tensor in state.items():
        if hf_name == "lm_head.weight" and fields["tie_word_embeddings"]:
            continue  # tied: llama.cpp has token_embd only
        gguf_name = _tensor_name(names, hf_name)
        dtype = np.dtype(np.float16 if tensor.dim() == 2 else np.float32)
        shape = tuple(int(d) for d in tensor.shape)
        if not weights:
            nbytes = int(np.prod(shape)) * dtype.itemsize
            writer.add_tensor_info(gguf_name, shape, dtype, nbytes)
            data_bytes += gguf.GGUFWriter.ggml_pad(nbytes, writer.data_alignment)
            continue
        data = tensor.detach().float().cpu().numpy()
        if arch.permuted_qk and hf_name.endswith("q_proj.weight"):
            data = permute_rows(data, n_head, n_head)
        elif arch.permuted_qk and hf_name.endswith("k_proj.weight"):
            data = permute_rows(data, n_head, n_head_kv)
        writer.add_tensor(gguf_name, np.ascontiguousarray(data.astype(dtype)))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    if weights:
        writer.write_tensors_to_file()
    else:
        writer.write_ti_data_to_file()
        assert writer.fout is not None and len(writer.fout) == 1
        out = writer.fout[0]
        writer.write_padding(out, out.tell())  # the data region starts aligned
        out.truncate(out.tell() + data_bytes)  # a hole: zeros, no blocks on disk
    writer.close()
    return path.stat().st_size
