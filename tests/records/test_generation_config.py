"""Generation settings merge in one place: the options, then the request's own values on top."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mtvbench.models.gemini import GeminiBackend
from mtvbench.models.local import GenParams
from mtvbench.models.openai_api import openai_generation_params
from mtvbench.models.settings import BackendOptions
from mtvbench.models.vllm_engine import sampling_kwargs
from mtvbench.records import GenerationConfig, GenerationRequest


def test_merge_lets_set_values_win() -> None:
    base = GenerationConfig(max_tokens=100, temperature=0.7, top_p=0.9, repetition_penalty=1.05)
    over = GenerationConfig(temperature=0.0, system="S")
    merged = base.merge(over)
    assert merged == GenerationConfig(max_tokens=100, temperature=0.0, top_p=0.9, repetition_penalty=1.05, system="S")
    assert base.merge(GenerationConfig()) == base  # nothing set: nothing changes
    assert merged.greedy and not merged.sampling
    assert GenerationConfig(temperature=0.6, do_sample=False).greedy
    assert GenerationConfig(do_sample=True).sampling and not GenerationConfig().sampling


def test_options_read_their_generation_settings_also_in_the_old_backend_option_spelling() -> None:
    opts = BackendOptions(max_tokens=64, temperature=0.5, system="sys",
                          extra={"do_sample": False, "repetition_penalty": 1.1, "min_p": 0.05, "seed": 3, "x": 1})
    g = opts.generation()
    assert (g.max_tokens, g.temperature, g.system, g.do_sample, g.repetition_penalty, g.min_p, g.seed) == (
        64, 0.5, "sys", False, 1.1, 0.05, 3)
    request = GenerationRequest(id="r", prompt="p",
                                generation=GenerationConfig(temperature=0.9, max_tokens=8, system=""))
    call = opts.settings_for(request.generation)
    assert (call.temperature, call.max_tokens, call.system) == (0.9, 8, "sys")  # an empty system is not set
    assert opts.repetition_penalty == 1.1 and opts.options == {"x": 1}  # moved from extra to its field
    assert BackendOptions(repetition_penalty=1.0, extra={"repetition_penalty": 2.0}).repetition_penalty == 1.0
    with pytest.raises(ValidationError, match="repetition_penalty"):
        BackendOptions(extra={"repetition_penalty": "high"})
    # run fingerprints read these as they read them when they were backend options: old run directories
    # resume without asking anything again
    old = {"do_sample": True, "repetition_penalty": 1.05, "video_part": True, "extra_body": {"min_p": 0.1}}
    assert BackendOptions(extra=old).answer_options() == old


def test_every_backend_maps_the_same_merged_settings() -> None:
    opts = BackendOptions(max_tokens=50, temperature=0.6, top_p=0.8, top_k=20,
                          extra={"repetition_penalty": 1.05, "presence_penalty": 1.5})
    request = GenerationRequest(id="r", prompt="p", generation=GenerationConfig(temperature=0.2))
    g = opts.settings_for(request.generation)
    assert openai_generation_params(g, {}) == {"max_tokens": 50, "temperature": 0.2, "top_p": 0.8,
                                               "presence_penalty": 1.5,
                                               "extra_body": {"top_k": 20, "repetition_penalty": 1.05}}
    assert GenParams.of(request, opts).hf_kwargs() == {"max_new_tokens": 50, "do_sample": True, "temperature": 0.2,
                                                       "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}
    assert sampling_kwargs(request, opts) == {"max_tokens": 50, "temperature": 0.2, "top_p": 0.8, "top_k": 20,
                                              "repetition_penalty": 1.05, "presence_penalty": 1.5}
    pytest.importorskip("google.genai")
    gem = GeminiBackend.__new__(GeminiBackend)
    gem.options = opts
    cfg = gem._config(request)
    assert (cfg.temperature, cfg.top_p, cfg.top_k, cfg.max_output_tokens) == (0.2, 0.8, 20, 50)


def test_one_shape_options_are_a_generation_config_and_requests_carry_one() -> None:
    opts = BackendOptions(max_tokens=64, temperature=0.5, system="sys")
    assert isinstance(opts, GenerationConfig)
    assert set(GenerationConfig.model_fields) < set(BackendOptions.model_fields)
    request = GenerationRequest(id="r", prompt="p", generation=GenerationConfig(temperature=0.9, system=""))
    call = opts.settings_for(request.generation)
    assert (call.temperature, call.max_tokens, call.system) == (0.9, 64, "sys")  # an empty system is not set
    assert type(call) is GenerationConfig and opts.generation() == GenerationConfig(max_tokens=64, temperature=0.5,
                                                                                    system="sys")


def test_backend_options_are_options_in_code_and_extra_where_stored() -> None:
    """"extra" names a pip extra; a role's own backend options are ``options`` in code, and keep their stored key
    ``extra`` in YAML, config.yaml and the constructor."""
    opts = BackendOptions(extra={"input": "upload"})
    assert opts.options == {"input": "upload"}
    assert opts.model_dump(exclude_defaults=True) == {"extra": {"input": "upload"}}
    assert not hasattr(opts, "extra")
