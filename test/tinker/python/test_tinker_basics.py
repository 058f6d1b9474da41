"""What a user meets first: the server's capabilities (RestClient, no session), a key the service
does not know refused at once (no retrying for minutes), and a session that ends when its
ServiceClient closes."""

from __future__ import annotations

import time

import pytest
import tinker

from conftest import TinkerClients
from tinker_steps import ready


@pytest.mark.time_limit(60)
def test_capabilities_list_the_base_models(tinker_clients: TinkerClients) -> None:
    rest = tinker_clients.rest_client()
    if hasattr(rest, "get_server_capabilities"):
        capabilities = rest.get_server_capabilities().result()
    else:  # SDK 0.34: only on the ServiceClient
        capabilities = tinker_clients.service_client().get_server_capabilities()
    models = {m.model_name: m for m in capabilities.supported_models}
    for name in ("tiny-chat", "tiny-tools", "smollm2"):
        assert name in models, sorted(models)
        assert models[name].trainable and models[name].sampleable, models[name]
        assert (models[name].max_context_length or 0) >= 2048, models[name]


@pytest.mark.time_limit(60)
def test_an_unknown_key_is_refused_at_once(tinker_clients: TinkerClients) -> None:
    started = time.monotonic()
    client = tinker.ServiceClient(base_url=tinker_clients.service.url, api_key="tml-srl_not-a-key")
    with pytest.raises(tinker.AuthenticationError):
        ready(client.create_lora_training_client(base_model="tiny-chat", rank=8))
    assert time.monotonic() - started < 30


@pytest.mark.time_limit(60)
def test_a_key_without_the_prefix_is_refused_by_the_sdk(tinker_clients: TinkerClients) -> None:
    # The SDK itself insists on `tml-`; the service key alone never reaches the server.
    with pytest.raises(tinker.TinkerError, match="tml-"):
        tinker_clients.rest_client(api_key=tinker_clients.service.keys["alice"]).get_server_capabilities()


@pytest.mark.time_limit(90)
def test_with_service_client_finishes_the_session(tinker_clients: TinkerClients) -> None:
    with tinker_clients.service_client() as service_client:
        training_client = ready(service_client.create_lora_training_client(base_model="tiny-chat", rank=8))
        sampler = ready(service_client.create_sampling_client(base_model="tiny-chat"))
        assert training_client.model_id and sampler.get_base_model() == "tiny-chat"
    # `with` finished the session (POST /api/v1/sessions/{id}/finish: a failure there raises from
    # __exit__), and the client is closed.
    with pytest.raises(RuntimeError):
        service_client.create_sampling_client(base_model="tiny-chat")
