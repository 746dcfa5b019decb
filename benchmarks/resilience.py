"""Benchmark the call path's bounds against the approach it replaces, in the same run.

    python benchmarks/resilience.py                   # 50 MB replies, 16 calls; a dead server, 64 calls
    python benchmarks/resilience.py --mb 20 --calls 8 --dead-calls 32

1. **Huge replies.** The loopback server answers every call with a ``--mb`` MB completion.
   ``capped``: the openai backend of mtvbench (``max_response_bytes`` default, 8 MiB), which
   stops reading at the cap; ``uncapped``: the openai client as it was used before (reads and
   parses the whole reply). ``--calls`` calls run concurrently in a child process per approach;
   ``peak RSS`` is the child's ``VmHWM``.
2. **A dead server.** Nothing listens on the port. ``--dead-calls`` calls through a semaphore of
   16 (the runner's default concurrency), ``max_retries`` 6, ``retry_base_s`` 0.1:
   ``breaker`` (default ``breaker_threshold`` 8; refused connections count at once) against
   ``no breaker`` (every call spends its retries). Seconds until every call has ended, and
   connection attempts made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from mtvbench.models.registry import create_backend  # noqa: E402
from mtvbench.models.resilience import CircuitOpenError  # noqa: E402
from mtvbench.models.settings import BackendOptions  # noqa: E402
from mtvbench.records import GenerationRequest  # noqa: E402


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _capped(url: str, calls: int) -> list[str]:
    b = create_backend("openai:m", BackendOptions(base_url=url, max_retries=0))
    try:
        res = await asyncio.gather(*(b.generate(GenerationRequest(id=str(i), prompt=f"q{i}")) for i in range(calls)))
    finally:
        await b.aclose()
    return [r.outcome for r in res]


async def _uncapped(url: str, calls: int) -> list[str]:
    import openai

    client = openai.AsyncOpenAI(api_key="EMPTY", base_url=url, max_retries=0, timeout=300)
    try:
        res = await asyncio.gather(*(client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"q{i}"}]) for i in range(calls)))
    finally:
        await client.close()
    return ["ok" if r.choices[0].message.content else "empty" for r in res]


def child(kind: str, url: str, calls: int) -> None:
    start = time.perf_counter()
    outcomes = asyncio.run((_capped if kind == "capped" else _uncapped)(url, calls))
    print(json.dumps({"seconds": time.perf_counter() - start, "peak_rss_mb": vm_hwm_mb(),
                      "outcomes": sorted(set(outcomes))}))


def huge_replies(mb: int, calls: int) -> None:
    from tests.support.openai_server import Faults, LoopbackServer, ServerState, always

    state = ServerState(faults=Faults(plan=always("huge"), huge_bytes=mb << 20))
    rows = {}
    with LoopbackServer(state) as srv:
        for kind in ("capped", "uncapped"):
            out = subprocess.run([sys.executable, __file__, "--child", kind, "--url", srv.url, "--calls", str(calls)],
                                 capture_output=True, text=True, check=True)
            rows[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n{calls} concurrent calls, each answered with a {mb} MB reply")
    print(f"{'approach':<10} {'seconds':>8} {'peak RSS MB':>12}  outcomes")
    for kind, r in rows.items():
        print(f"{kind:<10} {r['seconds']:>8.2f} {r['peak_rss_mb']:>12.0f}  {','.join(r['outcomes'])}")
    print(f"peak RSS ratio uncapped/capped: {rows['uncapped']['peak_rss_mb'] / rows['capped']['peak_rss_mb']:.1f}x")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _dead(url: str, calls: int, threshold: int) -> tuple[float, int, int]:
    b = create_backend("openai:m", BackendOptions(base_url=url, max_retries=6, retry_base_s=0.1,
                                                  breaker_threshold=threshold))
    sem = asyncio.Semaphore(16)
    sent = 0

    async def one(i: int) -> None:
        nonlocal sent
        async with sem:
            try:
                res = await b.generate(GenerationRequest(id=str(i), prompt=f"q{i}"))
            except CircuitOpenError:
                return
            sent += res.attempts

    start = time.perf_counter()
    try:
        await asyncio.gather(*(one(i) for i in range(calls)))
    finally:
        await b.aclose()
    return time.perf_counter() - start, sent, calls


def dead_server(calls: int) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    with_breaker = asyncio.run(_dead(url, calls, 8))
    without = asyncio.run(_dead(url, calls, 10**9))
    print(f"\n{calls} calls to a dead server (16 in flight, max_retries 6, retry_base_s 0.1)")
    print(f"{'approach':<10} {'seconds':>8} {'attempts':>9}")
    for name, (secs, attempts, _) in (("breaker", with_breaker), ("no breaker", without)):
        print(f"{name:<10} {secs:>8.2f} {attempts:>9}")
    print(f"time ratio no-breaker/breaker: {without[0] / with_breaker[0]:.0f}x, "
          f"attempts ratio: {without[1] / max(1, with_breaker[1]):.0f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--calls", type=int, default=16)
    ap.add_argument("--dead-calls", type=int, default=64)
    ap.add_argument("--child", choices=("capped", "uncapped"))
    ap.add_argument("--url")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.url, a.calls)
        return
    huge_replies(a.mb, a.calls)
    dead_server(a.dead_calls)


if __name__ == "__main__":
    main()
