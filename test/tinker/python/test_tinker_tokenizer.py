"""get_tokenizer(), as the cookbook and ART call it: the SDK asks get_info for the model's
tokenizer_id and loads it with transformers' AutoTokenizer.from_pretrained, which (HF_ENDPOINT set
to the service's /hf) downloads the tokenizer the service derives from the base model's GGUF.
Its token ids must be the model's: for SmolLM2, the ids its GGUF's tokenizer gives."""

from __future__ import annotations

import pytest

from conftest import TinkerClients
from tinker_steps import SMOLLM2_TOKENS, ready

SMOLLM2_TEXT = "The capital of France is Paris. It is famous for the Eiffel Tower and its museums."


@pytest.mark.time_limit(120)
@pytest.mark.parametrize("base", ["tiny-chat", "smollm2"])
def test_get_tokenizer_is_the_models(tinker_clients: TinkerClients, base: str) -> None:
    service_client = tinker_clients.service_client()
    training_client = ready(
        service_client.create_lora_training_client(base_model=base, rank=8, train_unembed=base != "smollm2")
    )
    tokenizer = training_client.get_tokenizer()
    text = SMOLLM2_TEXT if base == "smollm2" else "Hello, world! naïve café"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text
    if base == "smollm2":
        assert ids == SMOLLM2_TOKENS, ids
    # A sampling client of the same base model gives the same tokenizer.
    sampler = ready(service_client.create_sampling_client(base_model=base))
    assert sampler.get_tokenizer().encode(text, add_special_tokens=False) == ids
    # The chat template renders a conversation with the model's own special tokens.
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert "<|im_start|>" in rendered, rendered
