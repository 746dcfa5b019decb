"""The real server (`mtvbench review serve` in a subprocess, uvicorn): two annotators posting at
once, the server killed mid-review and restarted — every acknowledged decision is kept."""

from __future__ import annotations

import signal
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from tests.review.conftest import item_url, running_server, verdict, who

pytest.importorskip("uvicorn", reason="the review web app needs mtvbench[review]")


def test_concurrent_annotators_and_a_killed_server_lose_nothing(sample: Path) -> None:
    acked: list[tuple[str, str]] = []
    lock = threading.Lock()
    enough = threading.Event()
    with running_server(sample) as (url, proc):
        ids = [i["id"] for i in httpx.get(url + "/api/items", headers=who("ann1"), timeout=10).json()["items"]]

        def annotate(name: str) -> None:
            with httpx.Client(base_url=url, timeout=10) as c:
                for iid in ids:
                    try:
                        r = c.post(item_url(iid, "/review"), headers=who(name), json=verdict(name, "accept"))
                    except httpx.TransportError:
                        return  # the server is gone: this decision was never acknowledged
                    if r.status_code != 200:
                        return
                    with lock:
                        acked.append((name, iid))
                        if len(acked) >= len(ids):
                            enough.set()

        threads = [threading.Thread(target=annotate, args=(n,)) for n in ("ann1", "ann2")]
        for t in threads:
            t.start()
        enough.wait(timeout=60)
        proc.send_signal(signal.SIGKILL)  # mid-review: no clean shutdown
        proc.wait(timeout=10)
        for t in threads:
            t.join(timeout=30)
    assert len(acked) >= len(ids)
    with sqlite3.connect(sample / "review.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with running_server(sample) as (url, _), httpx.Client(base_url=url, timeout=10) as c:
        for name in ("ann1", "ann2"):
            mine = {i["id"]: i["mine"] for i in c.get("/api/items", headers=who(name)).json()["items"]}
            assert all(mine[iid] == "accept" for n, iid in acked if n == name)
        # finish the review after the restart
        for name in ("ann1", "ann2"):
            while (nxt := c.get("/api/next", headers=who(name)).json()["id"]) is not None:
                assert c.post(item_url(nxt, "/review"), headers=who(name),
                              json=verdict(name, "accept")).status_code == 200
        p = c.get("/api/progress", headers=who("lead", "senior")).json()
    assert p["counts"]["accepted"] == len(ids)
    assert {a["name"]: a["done"] for a in p["annotators"]} == {"ann1": len(ids), "ann2": len(ids)}


def test_range_request_through_the_real_server(sample: Path) -> None:
    with running_server(sample) as (url, proc), httpx.Client(base_url=url, timeout=10) as c:
        iid = c.get("/api/next", headers=who("a")).json()["id"]
        d = c.get(item_url(iid), headers=who("a")).json()
        size = (sample / "videos" / f"{d['video']}.mp4").stat().st_size
        r = c.get(d["video_url"], headers={"Range": f"bytes={size - 50}-"})
        assert r.status_code == 206 and r.headers["content-range"] == f"bytes {size - 50}-{size - 1}/{size}"
        assert r.content == (sample / "videos" / f"{d['video']}.mp4").read_bytes()[-50:]
        assert c.get(d["video_url"], headers={"Range": f"bytes={size + 10}-"}).status_code == 416
        assert c.get("/", headers={"Host": "attacker.example"}).status_code == 421
    assert proc.returncode == 0  # Ctrl-C stops the server cleanly
