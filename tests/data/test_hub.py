"""`mtvbench download` and `--data hf:...` without a network.

What is exercised: discovery and layout on local folders shaped like Hub snapshots (files at
the top or one level down, loose videos or zip/tar archives), safe unpacking, the real
``snapshot_download`` reading a Hugging Face cache built by hand (offline: ``local_files_only``
in-process and ``HF_HUB_OFFLINE=1`` in a subprocess), and the Hub's own error for a gated
dataset, served by a local HTTP server through ``endpoint``. What is not: a real download
from huggingface.co (no network here), and the real release's file names.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.data import archives
from mtvbench.data.archives import unpack
from mtvbench.data.hub import HubSpec, Snapshot, fetch_snapshot, prepare, read_record
from mtvbench.data.official import load_official
from mtvbench.errors import InputError, OutputError
from tests.support.datasets import make_dataset
from tests.support.hubfake import COMMIT, dataset_files, fake_hf_cache

REPO = "NJU-LINK/MT-Video-Bench"
SPEC = HubSpec.parse(f"hf:{REPO}")


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files of a small dataset in the released layout."""
    return dataset_files(make_dataset(tmp_path_factory.mktemp("released") / "d"))


def _snapshot(folder: Path, files: dict[str, bytes]) -> Snapshot:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return Snapshot(spec=SPEC, path=folder, commit=COMMIT)


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _tar(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            t.addfile(info)
    return buf.getvalue()


def _assert_valid(root: Path) -> None:
    bench, problems = load_official(root)
    assert bench is not None, [p.render() for p in problems]
    assert len(bench.dialogues) == 6 and len(bench.videos) == 2


# ------------------------------------------------------------------------------ parsing

def test_hub_spec_parsing() -> None:
    assert HubSpec.parse("hf:NJU-LINK/MT-Video-Bench") == HubSpec(repo_id=REPO)
    assert HubSpec.parse("hf:NJU-LINK/MT-Video-Bench@v1.0").revision == "v1.0"
    assert HubSpec.parse("hf:a/b@refs/pr/3").text == "hf:a/b@refs/pr/3"
    for bad in ("hf:noslash", "hf:a/b/c", "hf:../x", "hf:a/..", "hf:a/b@../main", "hf:a--b/c"):
        with pytest.raises(InputError, match=re.escape(f"{bad!r}: ")):
            HubSpec.parse(bad)


# ------------------------------------------------------------------------------ discovery and layout

@pytest.mark.parametrize("prefix", ["", "MT-Video-Bench/"], ids=["top", "one-level-down"])
def test_snapshot_folders_at_the_top_or_one_level_down(tmp_path: Path, released: dict[str, bytes],
                                                       prefix: str) -> None:
    snap = _snapshot(tmp_path / "snap", {"README.md": b"card", "static/logo.jpg": b"x",
                                         **{prefix + k: v for k, v in released.items()}})
    prepared = prepare(snap, tmp_path / "data")
    root = prepared.root
    _assert_valid(root)
    assert prepared.record.complete and prepared.record.video_files == "hard links"
    # videos are hard links to the snapshot's files (no second copy), JSON files are copies
    assert (root / "videos" / "vid0.mp4").stat().st_ino == (snap.path / prefix / "videos" / "vid0.mp4").stat().st_ino
    assert not (root / "mtqa" / "summary.json").is_symlink()
    assert read_record(root) == prepared.record


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_videos_in_archives_are_unpacked_once(tmp_path: Path, released: dict[str, bytes], kind: str) -> None:
    loose = {k: v for k, v in released.items() if not k.startswith("videos/")}
    videos = {f"MT-Video-Bench/{k}": v for k, v in released.items() if k.startswith("videos/")}
    junk = {"__MACOSX/videos/._vid0.mp4": b"apple double", "notes.txt": b"not wanted"}
    blob = _zip({**videos, **junk}) if kind == "zip" else _tar({**videos, **junk})
    snap = _snapshot(tmp_path / "snap", {**loose, f"videos.{kind}": blob})
    notes: list[str] = []
    prepared = prepare(snap, tmp_path / "data", note=notes.append)
    _assert_valid(prepared.root)
    assert (prepared.root / "videos" / "vid1.mp4").read_bytes() == released["videos/vid1.mp4"]
    assert sorted(p.name for p in (prepared.root / "videos").iterdir()) == ["vid0.mp4", "vid1.mp4"]
    assert prepared.record.archives == [f"videos.{kind}"]
    assert any("unpacking" in n for n in notes)
    # a second call reuses the complete folder: nothing is unpacked again
    notes.clear()
    again = prepare(snap, tmp_path / "data", note=notes.append)
    assert again.reused and notes == []
    # --force lays it out again but the unpacked archive is kept
    forced = prepare(snap, tmp_path / "data", note=notes.append, force=True)
    assert not forced.reused and notes == [] and "already unpacked" in " ".join(forced.notes)
    _assert_valid(forced.root)


def test_archive_member_escaping_the_destination_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(_zip({"videos/ok.mp4": b"v", "../../evil.mp4": b"x"}))
    with pytest.raises(InputError, match=r"bad\.zip: member '\.\./\.\./evil\.mp4'"):
        unpack(bad, tmp_path / "out" / "dest")
    assert not (tmp_path / "evil.mp4").exists() and not (tmp_path / "out" / "dest").exists()
    absolute = tmp_path / "abs.tar.gz"
    absolute.write_bytes(_tar({"/tmp/abs.mp4": b"x"}))
    with pytest.raises(InputError, match="absolute"):
        unpack(absolute, tmp_path / "out" / "dest2")


def test_archive_links_are_never_created(tmp_path: Path) -> None:
    arc = tmp_path / "v.tar.gz"
    arc.write_bytes(_tar({"videos/a.mp4": b"video"}, links={"videos/passwd.mp4": "/etc/passwd"}))
    rep = unpack(arc, tmp_path / "dest")
    assert rep.skipped_links == ["videos/passwd.mp4"] and rep.files == 1
    assert sorted(p.name for p in (tmp_path / "dest" / "videos").iterdir()) == ["a.mp4"]


def test_archive_that_expands_suspiciously_or_does_not_fit_is_refused(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(_zip({"mtqa/summary.json": b"\0" * (4 << 20)}))
    with pytest.raises(InputError, match="claims to expand"):
        unpack(bomb, tmp_path / "dest", max_ratio=100)
    big = tmp_path / "big.zip"
    big.write_bytes(_zip({"videos/a.mp4": os.urandom(1 << 16)}))

    class Usage:
        free = 1 << 20  # less than the member plus the margin

    monkeypatch.setattr(archives.shutil, "disk_usage", lambda _: Usage)
    with pytest.raises(OutputError, match="needs 0.00 GB"):
        unpack(big, tmp_path / "dest")
    assert not (tmp_path / "dest").exists() and not (tmp_path / "dest.partial").exists()


def test_split_archive_pieces_are_one_clear_error(tmp_path: Path, released: dict[str, bytes]) -> None:
    loose = {k: v for k, v in released.items() if not k.startswith("videos/")}
    snap = _snapshot(tmp_path / "snap", {**loose, "videos.zip.001": b"a", "videos.zip.002": b"b"})
    with pytest.raises(InputError, match=r"split archive \(videos\.zip\.001, videos\.zip\.002\).*cat videos\.zip\."):
        prepare(snap, tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_snapshot_without_the_released_files_says_what_it_holds(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path / "snap", {"README.md": b"card", "static/logo.jpg": b"x"})
    with pytest.raises(InputError) as e:
        prepare(snap, tmp_path / "data")
    msg = str(e.value)
    assert "no task files" in msg and "README.md, static" in msg and SPEC.page in msg
    assert not (tmp_path / "data").exists()  # nothing written


def test_target_holding_other_files_is_refused(tmp_path: Path, released: dict[str, bytes]) -> None:
    snap = _snapshot(tmp_path / "snap", released)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "thesis.tex").write_text("mine")
    with pytest.raises(OutputError, match="not made by `mtvbench download`"):
        prepare(snap, tmp_path / "data")
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["thesis.tex"]


# ------------------------------------------------------------------------------ the Hub library, offline

@pytest.fixture
def hub_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, released: dict[str, bytes]) -> Path:
    """A Hugging Face cache holding the dataset one level down; the Hub library offline."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    fake_hf_cache(cache, REPO, {"README.md": b"card", **{f"MT-Video-Bench/{k}": v for k, v in released.items()}})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path / "mtv-cache"))
    return cache


def test_fetch_reads_the_hub_cache_offline(hub_env: Path) -> None:
    snap = fetch_snapshot(SPEC, offline=True, hf_cache=hub_env)
    assert snap.commit == COMMIT and snap.path.name == COMMIT
    with pytest.raises(InputError, match="revision|not .*in the local Hugging Face cache"):
        fetch_snapshot(HubSpec.parse(f"hf:{REPO}@v9"), offline=True, hf_cache=hub_env)


def test_download_then_data_hf_everywhere_from_the_same_cache(hub_env: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["download"])
    assert r.exit_code == 0, r.output
    target = tmp_path / "mtv-cache" / "datasets" / "NJU-LINK--MT-Video-Bench" / COMMIT
    assert f"laid out (2 videos as hard links) in {target}" in r.output
    assert "6 dialogues, 2 videos, 12 scored turns; 0 errors" in r.output
    assert "--data hf:NJU-LINK/MT-Video-Bench" in r.output
    again = CliRunner().invoke(app, ["download"])
    assert again.exit_code == 0 and "already laid out" in again.output

    v = CliRunner().invoke(app, ["validate", "hf:NJU-LINK/MT-Video-Bench"])
    assert v.exit_code == 0 and f"{target}: 6 dialogues" in v.output, v.output
    s = CliRunner().invoke(app, ["stats", "hf:NJU-LINK/MT-Video-Bench", "--no-per-task"])
    assert s.exit_code == 0 and "\nMT-Video-Bench (all)\t30\t" in s.output, s.output
    out = tmp_path / "run"
    run = CliRunner().invoke(app, ["run", "--data", "hf:NJU-LINK/MT-Video-Bench", "--model", "oracle", "--judge",
                                   "offline", "--judge-runs", "1", "--out", str(out), "--quiet",
                                   "--cache-dir", str(tmp_path / "frames")])
    assert run.exit_code == 0, run.output
    assert json.loads((out / "scores.json").read_text())["counts"]["dialogues"] == 6
    assert f"data: {target}" in (out / "config.yaml").read_text()


def test_a_snapshot_link_pointing_outside_the_hub_cache_is_never_followed(hub_env: Path, tmp_path: Path) -> None:
    """The snapshot's files are links to the cache's blobs; one pointing elsewhere (here at a video
    outside the cache) is neither read nor hard-linked into videos/: one error naming it, nothing written."""
    snap = hub_env / f"datasets--{REPO.replace('/', '--')}" / "snapshots" / COMMIT
    outside = tmp_path / "private" / "vid1.mp4"
    outside.parent.mkdir()
    outside.write_bytes((snap / "MT-Video-Bench" / "videos" / "vid1.mp4").read_bytes())
    (snap / "MT-Video-Bench" / "videos" / "vid1.mp4").unlink()
    (snap / "MT-Video-Bench" / "videos" / "vid1.mp4").symlink_to(outside)
    target = tmp_path / "mtv-cache" / "datasets" / "NJU-LINK--MT-Video-Bench" / COMMIT
    r = CliRunner().invoke(app, ["download"])
    assert r.exit_code == 2, r.output
    assert r.output.count("error:") == 1 and "Traceback" not in r.output
    assert f"MT-Video-Bench/videos/vid1.mp4 -> {outside}" in " ".join(r.output.split())
    assert "pointing outside its Hugging Face cache folder" in r.output
    assert not target.exists() and outside.stat().st_nlink == 1  # nothing laid out, no hard link to it
    with pytest.raises(InputError, match="not followed"):
        prepare(fetch_snapshot(SPEC, offline=True, hf_cache=hub_env), tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_download_to_a_folder(hub_env: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["download", "NJU-LINK/MT-Video-Bench", "--out", str(tmp_path / "mtvb"),
                                 "--revision", "main"])
    assert r.exit_code == 0, r.output
    _assert_valid(tmp_path / "mtvb")
    assert f"--data {tmp_path / 'mtvb'}" in r.output


def test_offline_without_the_files_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hf-cache"))
    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path / "mtv-cache"))
    r = CliRunner().invoke(app, ["download", "--offline", "--out", str(tmp_path / "data")])
    assert r.exit_code == 2, r.output
    assert "not (completely) in the local Hugging Face cache" in r.output and "Traceback" not in r.output
    assert "run `mtvbench download` once with network access" in r.output
    assert not (tmp_path / "data").exists() and not (tmp_path / "mtv-cache").exists()


def test_hf_hub_offline_env_in_a_fresh_process(tmp_path: Path, released: dict[str, bytes]) -> None:
    """The Hub library's own offline switch (read when it is imported), end to end."""
    cache = tmp_path / "hf-cache"
    fake_hf_cache(cache, REPO, {f"MT-Video-Bench/{k}": v for k, v in released.items()})
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "MTVBENCH_CACHE": str(tmp_path / "m"),
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "PYTHONPATH": str(src)}
    r = subprocess.run([sys.executable, "-m", "mtvbench", "validate", "hf:NJU-LINK/MT-Video-Bench"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 dialogues, 2 videos, 12 scored turns; 0 errors" in r.stdout


# ------------------------------------------------------------------------------ the Hub's errors

class _Hub(BaseHTTPRequestHandler):
    status = 403
    code = "GatedRepo"
    message = "Access to dataset NJU-LINK/MT-Video-Bench is restricted. You must have access to it."

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(self.status)
        self.send_header("X-Error-Code", self.code)
        self.send_header("X-Error-Message", self.message)
        self.send_header("Content-Type", "application/json")
        body = json.dumps({"error": self.message}).encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub_server() -> Iterator[tuple[str, type[_Hub]]]:
    handler = type("Hub", (_Hub,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_gated_dataset_says_accept_the_terms_and_set_a_token(hub_server: tuple[str, type[_Hub]], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = hub_server
    secret = "hf_secretvalue0123456789"
    monkeypatch.setenv("HF_TOKEN", secret)
    with pytest.raises(InputError) as e:
        fetch_snapshot(SPEC, endpoint=url, hf_cache=tmp_path / "hf")
    msg = str(e.value)
    assert "access refused, the dataset is gated (https://huggingface.co/datasets/NJU-LINK/MT-Video-Bench)" in msg
    assert "is restricted" in msg  # the server's own words
    assert "accept the dataset's terms" in msg and "HF_TOKEN" in msg and "hf auth login" in msg
    assert "a token is set" in msg and secret not in msg


def test_missing_dataset_names_the_page(hub_server: tuple[str, type[_Hub]], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    url, handler = hub_server
    handler.status, handler.code, handler.message = 404, "RepoNotFound", "Repository not found"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved token either
    with pytest.raises(InputError, match="dataset not found or not accessible") as e:
        fetch_snapshot(HubSpec.parse("hf:NJU-LINK/No-Such-Bench"), endpoint=url, hf_cache=tmp_path / "hf")
    assert "no token is set" in str(e.value)


def test_download_that_cannot_fit_is_refused_before_it_starts(hub_server: tuple[str, type[_Hub]],
                                                              tmp_path: Path) -> None:
    url, handler = hub_server

    def listing(self: _Hub) -> None:
        body = json.dumps({"id": REPO, "sha": COMMIT, "private": False, "gated": "manual",
                           "siblings": [{"rfilename": "README.md", "size": 100},
                                        {"rfilename": "videos.zip", "size": 10**15}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    handler.do_GET = listing  # type: ignore[method-assign]
    with pytest.raises(OutputError, match=r"1000000\.0 GB still to download, .* GB free in the Hugging Face cache"):
        fetch_snapshot(SPEC, endpoint=url, hf_cache=tmp_path / "hf")
    assert not (tmp_path / "hf").exists() or not any((tmp_path / "hf").rglob("videos.zip"))
