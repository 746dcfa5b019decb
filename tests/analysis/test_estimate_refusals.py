"""What `run` would refuse, `estimate` refuses (issue 25, point 4): a dataset whose videos are not usable
(empty, truncated, text, random bytes, audio only, a JPEG named .mp4, missing) is one error naming each video,
exit 2 as `validate`, the probe's verdicts cached by content; every number option is finite and in its range."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from mtvbench.media.cache import fingerprint
from mtvbench.media.probe import ProbeCache
from tests.support.datasets import make_dataset
from tests.support.run_helpers import cli
from tests.support.videogen import write_audio, write_video


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _truncated(path: Path) -> None:
    data = write_video(path.with_name("whole.mp4"), 120, gop=12, faststart=True).read_bytes()
    path.with_name("whole.mp4").unlink()
    path.write_bytes(data[: int(len(data) * 0.6)])


def _text(path: Path) -> None:
    path.write_text("these are notes about the clip, not a video\n" * 20)


def _random(path: Path) -> None:
    path.write_bytes(np.random.default_rng(25).integers(0, 256, 30_000, dtype=np.uint8).tobytes())


def _audio(path: Path) -> None:
    write_audio(path)


def _jpeg(path: Path) -> None:
    Image.fromarray(np.full((48, 64, 3), 120, np.uint8)).save(path, format="JPEG")


def _missing(path: Path) -> None:
    path.unlink()


#: kind -> (how the bad file is made, words of the verdict)
BAD: dict[str, tuple[Any, str]] = {
    "empty": (_empty, "is empty"),
    "truncated": (_truncated, "is truncated"),
    "text": (_text, "cannot be opened as a video"),
    "random bytes": (_random, "cannot be opened as a video"),
    "audio only": (_audio, "has no video stream"),
    "jpeg named .mp4": (_jpeg, "is a still image, not a video"),
    "missing": (_missing, "vid0"),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_estimate_refuses_the_videos_run_refuses(kind: str, tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    make, words = BAD[kind]
    make(data / "videos" / "vid0.mp4")
    args = ["--data", str(data), "--model", "openai:gpt-4o", "--judge", "offline"]
    est = cli("estimate", *args)
    text = " ".join(est.output.split())
    assert est.exit_code == 2, text
    assert "vid0" in text and words in text and "vid1" not in text, text
    assert "Estimate" not in text and "internal error" not in text
    # the same verdict as validate's and run's, with the same exit status as validate
    val = cli("validate", str(data))
    assert val.exit_code == 2 and words in " ".join(val.output.split())
    run = cli("run", *args, "--out", str(tmp_path / "run"), "--quiet")
    assert run.exit_code == 2 and words in " ".join(run.output.split()) and not (tmp_path / "run").exists()
    if kind not in ("missing", "empty"):  # the probe's verdict is cached by the file's content
        assert ProbeCache().get(fingerprint(data / "videos" / "vid0.mp4")) is not None


def _number_options() -> list[str]:
    """Every option of `estimate` that takes a number: its own and run's settings flags."""
    from mtvbench.analysis.estimate import ESTIMATE_FLAGS, command

    own = ["--" + p.name.replace("_", "-") for p in command.__signature__.parameters.values()  # type: ignore[attr-defined]
           if float in typing.get_args(typing.get_args(p.annotation)[0])]
    flags = [f.name for f in ESTIMATE_FLAGS if f.type is float or f.value_type is float]
    return sorted(set(own) | set(flags))


def test_the_number_options_are_found() -> None:
    options = _number_options()
    assert {"--latency", "--ray-gpus", "--temperature", "--top-p"} <= set(options), options


@pytest.mark.parametrize("value", ["1e309", "inf", "-inf", "nan"])
@pytest.mark.parametrize("option", _number_options())
def test_a_number_option_that_is_not_finite_is_one_error(option: str, value: str, tmp_path: Path) -> None:
    data = _shared_data(tmp_path)
    res = cli("estimate", "--data", str(data), "--model", "openai:gpt-4o", "--judge", "offline", option, value)
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert text.count("error:") == 1 and option in text and "internal error" not in text, text


@pytest.mark.parametrize("value", ["-1", "0", "1e308", "86401"])
def test_a_latency_out_of_range_is_one_error(value: str, tmp_path: Path) -> None:
    res = cli("estimate", "--data", str(_shared_data(tmp_path)), "--model", "openai:gpt-4o", "--judge", "offline",
              "--latency", value, "--format", "json")
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "--latency: must be a number of seconds > 0 and at most 86,400" in text, text


def test_the_largest_latency_still_gives_a_finite_time(tmp_path: Path) -> None:
    res = cli("estimate", "--data", str(_shared_data(tmp_path)), "--model", "openai:gpt-4o", "--judge", "offline",
              "--latency", "86400", "--format", "json")
    assert res.exit_code == 0, res.output
    assert '"seconds": ' in res.output and '"seconds": null' not in res.output


def _shared_data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    return root if root.exists() else make_dataset(root)


@pytest.mark.parametrize(("field", "value"), [("requests", -5), ("completion_tokens", "many"),
                                              ("latency_s", -1.0), ("unknown_field", 1)])
def test_an_edited_estimate_json_is_one_error_naming_the_field(field: str, value: object, tmp_path: Path) -> None:
    import json

    from mtvbench.analysis.estimate import read_estimate
    from mtvbench.errors import InputError

    out = tmp_path / "run"
    res = cli("estimate", "--data", str(_shared_data(tmp_path)), "--model", "openai:gpt-4o", "--judge", "offline",
              "--latency", "2", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert read_estimate(out) is not None
    data = json.loads((out / "estimate.json").read_text())
    data["model_role"][field] = value
    (out / "estimate.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        read_estimate(out)
    assert "estimate.json: field 'model_role." in str(err.value) and field in str(err.value)
