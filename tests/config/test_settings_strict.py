"""Settings keys are strict everywhere (issue 25, point 4): every settings model of mtvbench (a name ending in
Settings, Config, Options or Price: run and build settings, a role's backend options, generation and frame
settings, each build stage's section, scene detection) refuses an unknown key and a non-finite number, from
Python as from YAML, so a misspelt key is never dropped without a word."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from pydantic import BaseModel, ValidationError

import mtvbench

#: modules that need an optional extra or start something when imported
SKIPPED = ("mtvbench.__main__",)
SUFFIXES = ("Settings", "Config", "Options", "Price")
#: named like settings, but not settings a user gives: where a role's settings come from, for messages
NOT_SETTINGS = {"SettingsOrigin"}


def settings_models() -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.walk_packages(mtvbench.__path__, "mtvbench."):
        if info.name in SKIPPED:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == info.name
                    and name.endswith(SUFFIXES) and name not in NOT_SETTINGS):
                found[f"{info.name}.{name}"] = obj
    return [found[k] for k in sorted(found)]


MODELS = settings_models()


def test_the_settings_models_are_found() -> None:
    names = {m.__name__ for m in MODELS}
    assert {"RunConfig", "RoleSettings", "BackendOptions", "GenerationConfig", "ConnectionSettings", "FrameSettings",
            "SplitSettings", "SceneSettings", "Price", "BuildSettings"} <= names, sorted(names)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_every_settings_model_refuses_an_unknown_key_and_a_non_finite_number(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") == "forbid", model
    assert model.model_config.get("allow_inf_nan") is False, model
    with pytest.raises(ValidationError) as err:
        model.model_validate({"no_such_setting": 1})
    assert any(e["type"] == "extra_forbidden" and e["loc"] == ("no_such_setting",) for e in err.value.errors())
