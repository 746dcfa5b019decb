"""A key variable named explicitly (a flag, a config file, a preset) must be set and non-empty.

Before, an unset ``--model-api-key-env NOPE_NOT_SET`` was silently replaced by the placeholder key and
the run went on (rc 0, the server received ``Bearer EMPTY``). Now it is one error naming the variable
and where it was named, exit 2, before anything is written; unnamed defaults are unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.models.endpoints import PLACEHOLDER_KEY
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer

UNSET = "MTVB_NOPE_NOT_SET"


@pytest.fixture(autouse=True)
def _unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    monkeypatch.delenv("ARK_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert "Traceback" not in res.output and "internal error" not in res.output
    return res.exit_code, " ".join(res.output.split())


def test_a_named_flag_variable_that_is_not_set_is_one_error_before_anything_is_written(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        for flag, role in (("--model-api-key-env", "model"), ("--judge-api-key-env", "judge")):
            code, out = _run("run", "--data", str(data), "--model", "openai:m", "--judge", "openai:j",
                             f"--{role}-base-url", srv.url, flag, UNSET, "--out", str(tmp_path / "run"))
            assert code == 2, out
            assert f"{flag}: environment variable {UNSET} is not set (or is empty)" in out
        assert srv.state.requests == []  # nothing was sent, not even with the placeholder key
    assert not (tmp_path / "run").exists()


def test_a_variable_named_in_a_config_file_or_by_a_preset_is_named_with_its_place(tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"data": str(tmp_path), "model": "openai:m", "judge": "offline",
                                   "out": str(tmp_path / "run"),
                                   "model_settings": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": UNSET}}))
    code, out = _run("run", "--config", str(cfg))
    assert code == 2 and f"{cfg}: field 'model_settings.api_key_env': environment variable {UNSET} is not set" in out
    code, out = _run("run", "--data", str(tmp_path), "--model", "doubao-seed-1.6", "--judge", "offline",
                     "--out", str(tmp_path / "run"))
    assert code == 2, out
    assert "--model: the preset 'doubao-seed-1.6' sends its key from the environment variable ARK_API_KEY" in out
    assert "--model-api-key-env" in out  # how to name another one
    code, out = _run("run", "--data", str(tmp_path), "--model", "openai:m", "--judge", "offline",
                     "--model-base-url", "http://127.0.0.1:9/v1", "--model-api-key-env", " ",
                     "--out", str(tmp_path / "run"))
    assert code == 2 and "--model-api-key-env: must name an environment variable" in out
    assert not (tmp_path / "run").exists()


def test_build_and_checklists_refuse_an_unset_key_variable_before_writing(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        code, out = _run("build", "all", "-w", str(tmp_path / "ws"), "--model", "openai:builder",
                         "--model-base-url", srv.url, "--model-api-key-env", UNSET)
        assert code == 2 and f"--model-api-key-env: environment variable {UNSET} is not set" in out
        data = make_dataset(tmp_path / "data")
        code, out = _run("checklists", "--data", str(data), "--model", "openai:ck", "--model-base-url", srv.url,
                         "--model-api-key-env", UNSET, "--out", str(tmp_path / "copy"))
        assert code == 2 and f"--model-api-key-env: environment variable {UNSET} is not set" in out
        assert srv.state.requests == []
    assert not (tmp_path / "ws").exists() and not (tmp_path / "copy").exists()


def test_a_set_variable_is_sent_and_a_stored_config_scores_without_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_dataset(tmp_path / "data")
    monkeypatch.setenv(UNSET, "role-secret-0123456789")
    with LoopbackServer() as srv:
        code, out = _run("run", "--data", str(data), "--model", "openai:m", "--judge", "offline", "--quiet",
                         "--model-base-url", srv.url, "--model-api-key-env", UNSET, "--frames", "2",
                         "--limit", "1", "--out", str(tmp_path / "run"))
    assert code == 0, out
    assert set(srv.state.auth_headers) == {"Bearer role-secret-0123456789"}
    monkeypatch.delenv(UNSET)
    code, out = _run("score", str(tmp_path / "run"))  # the name is stored, not the key: no key needed to score
    assert code == 0, out
    with LoopbackServer() as srv:  # not named: a local server gets the placeholder, as before
        code, out = _run("run", "--data", str(data), "--model", "openai:m", "--judge", "offline", "--quiet",
                         "--model-base-url", srv.url, "--frames", "2", "--limit", "1", "--out", str(tmp_path / "r2"))
    assert code == 0, out
    assert set(srv.state.auth_headers) == {f"Bearer {PLACEHOLDER_KEY}"}
