"""Generation settings merge in one place: the options, then the request's own values on top."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mtvbench.config import RoleSettings
from mtvbench.models.gemini import GeminiBackend
from mtvbench.models.local import GenParams
from mtvbench.models.openai_api import openai_generation_params
from mtvbench.models.settings import GENERATION_SETTINGS, BackendOptions, setting_flag
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


def test_options_read_their_generation_settings_and_refuse_them_as_backend_options() -> None:
    opts = BackendOptions(max_tokens=64, temperature=0.5, system="sys", do_sample=False, repetition_penalty=1.1,
                          min_p=0.05, seed=3, extra={"x": 1})
    g = opts.generation()
    assert (g.max_tokens, g.temperature, g.system, g.do_sample, g.repetition_penalty, g.min_p, g.seed) == (
        64, 0.5, "sys", False, 1.1, 0.05, 3)
    request = GenerationRequest(id="r", prompt="p",
                                generation=GenerationConfig(temperature=0.9, max_tokens=8, system=""))
    call = opts.settings_for(request.generation)
    assert (call.temperature, call.max_tokens, call.system) == (0.9, 8, "sys")  # an empty system is not set
    assert opts.repetition_penalty == 1.1 and opts.options == {"x": 1}
    for setting in GENERATION_SETTINGS:  # each one error naming its flag
        flag = setting_flag(setting, "model")
        with pytest.raises(ValidationError, match=rf"'{setting}' is a setting of its own, not a backend option: "
                                                  rf"give it as {setting} \({flag} for the model\)"):
            RoleSettings(extra={setting: 1})
    assert RoleSettings(extra={"timeout_s": 5}).timeout_s == 5  # a call-path setting is still read there
    # run fingerprints read the settings a request does not carry with the backend options
    options = {"video_part": True, "extra_body": {"min_p": 0.1}}
    assert BackendOptions(do_sample=True, repetition_penalty=1.05, extra=options).answer_options() == {
        "do_sample": True, "extra_body": {"min_p": 0.1}, "repetition_penalty": 1.05, "video_part": True}


def test_every_backend_maps_the_same_merged_settings() -> None:
    opts = BackendOptions(max_tokens=50, temperature=0.6, top_p=0.8, top_k=20, repetition_penalty=1.05,
                          presence_penalty=1.5)
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
