"""A core-only install (``pip install`` of this tree, no extras) runs every evaluation and report
command, and every optional piece fails in one line naming its extra before writing anything.

The venv is made once per session in a temporary folder: a wheel of a copy of this tree, installed by pip
(a regular, non-editable install: it also proves that the package data ships, and the build leaves no files
in the checkout). Its dependencies are the core ones only: the closure of the wheel's own requirements (no
extra) over the distributions this environment already has, each given to the venv by links to its installed
files (``core-site``, on the venv's path through a .pth file) -- nothing of an extra is visible (checked), and
``pip check`` in the venv proves that the linked versions satisfy every requirement. That takes a second where
unpacking the same wheels again took half a minute. Where the closure cannot be linked (a distribution without a
file list, a folder two distributions share) pip installs the dependencies from the package index as before
(then without the index the test is skipped, saying why).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from importlib.metadata import Distribution, distribution, distributions, version
from pathlib import Path

import pytest

from tests.support.datasets import write_video
from tests.support.hubfake import dataset_files, fake_hf_cache

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
#: what the core must not bring (each belongs to an extra)
EXTRA_MODULES = ("torch", "transformers", "vllm", "google.genai", "scenedetect", "cv2", "ultralytics")


@pytest.fixture(scope="session")
def core_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("core-venv")
    tree = base / "tree"  # a copy, so that the build's files (build/, *.egg-info) stay out of the checkout
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    # The wheel is built by this environment's pip and setuptools ([dev]) without a build environment of
    # its own, and this pip installs it into a venv without pip (``--python``, pip >= 22.3; an older pip is
    # put into the venv): no ensurepip, no setuptools fetched into an isolated build folder. --no-compile:
    # no .pyc for every installed module up front; the commands below compile what they import.
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}  # the new venv's own
    built = subprocess.run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"),
                            str(tree)], capture_output=True, text=True, timeout=600, env=env)
    if built.returncode != 0 and "No module named" in built.stderr and "setuptools" in built.stderr:
        pytest.skip("setuptools is not installed (pip needs it to build the wheel offline): pip install -e '.[dev]'")
    assert built.returncode == 0, built.stderr
    env_dir = base / "venv"
    own_pip = tuple(int(x) for x in version("pip").split(".")[:2]) >= (22, 3)  # pip --python
    venv.EnvBuilder(with_pip=not own_pip).create(env_dir)
    py = env_dir / "bin" / "python"
    installer = [*pip, "--python", str(py)] if own_pip else [str(py), *pip[1:]]
    wheel = next((base / "dist").glob("*.whl"))
    linked = _link_core_dependencies(wheel, py, base / "core-site")
    r = subprocess.run([*installer, "install", "-q", "--no-compile", *(["--no-deps"] if linked else []), str(wheel)],
                       capture_output=True, text=True, timeout=1200, env=env)
    if r.returncode != 0:
        pytest.skip(f"cannot build a core-only environment (needs the package index): {r.stderr[-800:]}")
    if linked:
        check = subprocess.run([*installer, "check"], capture_output=True, text=True, timeout=300, env=env)
        assert check.returncode == 0, f"the linked core dependencies do not satisfy the wheel: {check.stdout}"
    probe = subprocess.run([str(py), "-c", "import importlib.util as u, sys; "
                            f"print([m for m in {EXTRA_MODULES!r} if u.find_spec(m.split('.')[0])])"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert probe.stdout.strip() == "[]", f"the core install pulled in extras: {probe.stdout}"
    return env_dir


def _name(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()


def _link_core_dependencies(wheel: Path, py: Path, site: Path) -> bool:
    """Link the installed files of the closure of ``wheel``'s requirements without extras into ``site`` and put
    ``site`` on the path of the venv of ``py``; False (nothing linked) where that cannot be done faithfully."""
    from packaging.requirements import Requirement

    closure: dict[str, Distribution] = {}
    todo = list(Distribution.at(_wheel_metadata(wheel, site.parent)).requires or [])
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if _name(req.name) in closure:
            continue
        try:
            dist = distribution(req.name)
        except ImportError:
            return False
        if dist.files is None or not req.specifier.contains(dist.version, prereleases=True):
            return False
        closure[_name(req.name)] = dist
        todo += dist.requires or []
    owners: dict[str, set[str]] = {}
    for dist in distributions():
        name = _name(dist.metadata["Name"])
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}:
            owners.setdefault(top, set()).add(name)
    site.mkdir()
    for name, dist in closure.items():
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}:
            if owners[top] != {name}:  # shared with another distribution: a link would show that one too
                shutil.rmtree(site)
                return False
            if not (site / top).exists():
                (site / top).symlink_to(Path(str(dist.locate_file(top))))
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    (Path(purelib) / "mtvbench-test-core-site.pth").write_text(str(site) + "\n")
    return True


def _wheel_metadata(wheel: Path, base: Path) -> Path:
    """The .dist-info folder of ``wheel``, unpacked under ``base``."""
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.split("/")[0].endswith(".dist-info")]
        z.extractall(base / "wheel-metadata", names)
    return base / "wheel-metadata" / names[0].split("/")[0]


def _mtvbench(venv_dir: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    full_env.update({"MTVBENCH_CACHE": str(cwd / "mtv-cache"), "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                     "COLUMNS": "200", **(env or {})})
    return subprocess.run([str(venv_dir / "bin" / "mtvbench"), *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=600)


def _one_line_naming(r: subprocess.CompletedProcess[str], extra: str) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out and "internal error" not in out
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and f"mtvbench[{extra}]" in errors[0], out


def test_core_install_runs_reports_and_refuses_extras_cleanly(core_venv: Path, tmp_path: Path) -> None:
    assert sys.platform != "win32"
    work = tmp_path
    demo = _mtvbench(core_venv, work, "demo", "--quiet", "--out", "d")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    runs, sample = work / "d" / "runs", work / "d" / "sample"

    # reports and analyses are core
    rep = _mtvbench(core_venv, work, "report", str(runs / "oracle"), str(runs / "refuse"), "--out", "rep",
                    "--thumbnails", "0")
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert (work / "rep" / "report.html").is_file() and list((work / "rep").rglob("*.png"))
    snapshot = json.loads((runs / "oracle" / "benchmark.json").read_text())
    turns = [f"{d['task']}/{d['video']}/{d['event']}#{r['index']}" for d in snapshot["dialogues"]
             for r in d["rounds"] if r["model_turn"] and r["checklist"]]
    with open(work / "human.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["turn_id", "score"])
        w.writerows([t, (i % 5) / 4] for i, t in enumerate(turns))
    agr = _mtvbench(core_venv, work, "agreement", "--human", "human.csv", str(runs / "oracle"))
    assert agr.returncode == 0 and "Spearman" in agr.stdout + agr.stderr, agr.stdout + agr.stderr
    st = _mtvbench(core_venv, work, "stats", str(sample))
    assert st.returncode == 0 and "MT-Video-Bench (all)" in st.stdout, st.stdout + st.stderr
    cmp_ = _mtvbench(core_venv, work, "compare", str(runs / "oracle"), str(runs / "refuse"), "--bootstrap", "200")
    assert cmp_.returncode == 0 and "n (paired dialogues)" in cmp_.stdout, cmp_.stdout + cmp_.stderr

    # optional pieces: one line naming the extra, nothing written
    write_video(work / "raw" / "v.mp4")
    for stage in ("split", "keyframes"):
        r = _mtvbench(core_venv, work, "build", stage, "--videos", "raw", "-w", f"ws-{stage}")
        _one_line_naming(r, "build")
        assert not (work / f"ws-{stage}").exists()
    for model, extra in (("qwen3-vl-8b-instruct", "hf"), ("gemini:gemini-2.5-flash", "gemini")):
        out = f"run-{extra}"
        r = _mtvbench(core_venv, work, "run", "--data", str(sample), "--model", model, "--judge", "offline",
                      "--out", out)
        _one_line_naming(r, extra)
        assert not (work / out).exists()
    sc = _mtvbench(core_venv, work, "scenes", str(sample), "--scene-cache", "scache", "--out", "scenes.json")
    _one_line_naming(sc, "build")
    assert not (work / "scache").exists() and not (work / "scenes.json").exists()


def test_core_install_downloads_from_a_hub_cache_offline(core_venv: Path, tmp_path: Path) -> None:
    from tests.support.datasets import make_dataset

    files = dataset_files(make_dataset(tmp_path / "src"))
    fake_hf_cache(tmp_path / "hf", "NJU-LINK/MT-Video-Bench", {f"data/{k}": v for k, v in files.items()})
    r = _mtvbench(core_venv, tmp_path, "download", "--out", "mtvb",
                  env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 dialogues, 2 videos, 12 scored turns; 0 errors" in r.stdout
