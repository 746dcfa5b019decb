"""Usage and cost of a run directory, per role (model under test, judge).

Computed from the store's append-only ledger of calls (every call ever made into the run
directory, across resumes, including failed and superseded ones: they were paid for) and
its run sessions. Cost needs prices per million tokens in the run config (``prices``, by
role or backend spec); without a price for a role that used tokens its cost is ``None``.

Cached tokens (the prompt tokens a provider served from its prefix or context cache) are part of
the prompt tokens and priced at ``cached_input`` (``input`` when the price has none). A call whose
cached count was not recorded (the server did not report it, or the run directory was made before
mtvbench stored it) is counted as "not recorded" and its prompt tokens at the full input price, so
its cost is an upper bound, and every line that shows it says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from mtvbench.records import Price

ROLES = ("model", "judge")


class RoleUsage(BaseModel):
    """What one role (the model under test, or the judge) used in a run directory: calls, requests, tokens, time and
    cost."""

    #: results obtained: model answers, judge runs (failed ones included)
    calls: int = 0
    failed_calls: int = 0
    #: requests sent: retries and judge re-asks included
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: the part of ``prompt_tokens`` served from the provider's cache, over the calls that recorded it
    cached_tokens: int = 0
    #: calls whose cached tokens were not recorded (their prompt tokens are priced as uncached)
    cached_not_recorded: int = 0
    #: sum of the calls' durations (larger than the wall time when calls overlap)
    call_seconds: float = 0.0
    #: time during which at least one call of this role was in flight
    wall_seconds: float = 0.0
    #: prompt and completion tokens at the configured prices; None without a price
    cost: float | None = None
    #: the prices applied (per million tokens)
    price: Price | None = None


class UsageReport(BaseModel):
    """Usage and cost of a run directory: per role, the ``run`` sessions and their wall time, and the total cost."""

    model: RoleUsage
    judge: RoleUsage
    #: ``run`` processes that wrote to this directory, and their total wall time
    sessions: int = 0
    wall_seconds: float = 0.0
    #: model + judge cost; None unless every role that used tokens has a price
    cost: float | None = None

    def role(self, name: str) -> RoleUsage:
        """The usage of role ``name`` (``model`` or ``judge``)."""
        return self.model if name == "model" else self.judge


def _union_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def role_usage(rows: Sequence[Mapping[str, Any]], price: Price | None, failed: Sequence[str] = ("error",)
               ) -> RoleUsage:
    """The usage of one role from its rows of the calls ledger, priced at ``price`` (no price: no cost, unless it
    used no tokens). A call whose outcome is in ``failed`` counts as failed."""
    calls = failed_calls = requests = prompt = completion = not_recorded = cached_sum = 0
    call_seconds = 0.0
    for r in rows:  # summed in locals: a record's field is validated on every assignment
        calls += 1
        failed_calls += r["outcome"] in failed
        requests += int(r["requests"] or 0)
        prompt += int(r["prompt_tokens"] or 0)
        completion += int(r["completion_tokens"] or 0)
        cached = r.get("cached_tokens")
        if cached is None:
            not_recorded += 1
        else:
            cached_sum += int(cached)
        call_seconds += float(r["latency_s"] or 0.0)
    u = RoleUsage(price=price, calls=calls, failed_calls=failed_calls, requests=requests, prompt_tokens=prompt,
                  completion_tokens=completion, cached_not_recorded=not_recorded, cached_tokens=cached_sum,
                  call_seconds=call_seconds)
    u.wall_seconds = _union_seconds((r["created"] - (r["latency_s"] or 0.0), r["created"]) for r in rows)
    if price is not None:
        u.cost = cost_of(price, u.prompt_tokens, u.cached_tokens, u.completion_tokens)
    elif u.prompt_tokens + u.completion_tokens == 0:
        u.cost = 0.0
    return u


def cost_of(price: Price, prompt_tokens: float, cached_tokens: float, completion_tokens: float) -> float:
    """The cost of these tokens at ``price`` (per million; cached prompt tokens at ``cached_input``)."""
    cached_price = price.input if price.cached_input is None else price.cached_input
    return ((prompt_tokens - cached_tokens) * price.input + cached_tokens * cached_price
            + completion_tokens * price.output) / 1e6


def cached_words(r: RoleUsage) -> str:
    """The cached prompt tokens of a role in words (how many; for how many calls they were not recorded)."""
    if r.cached_not_recorded == r.calls:
        return "cached tokens not recorded"
    missing = f", not recorded for {r.cached_not_recorded} calls" if r.cached_not_recorded else ""
    return f"{r.cached_tokens:,} of them cached{missing}"


def upper_bound(r: RoleUsage) -> bool:
    """The role's cost may be too high: some calls did not record cached tokens, which cost less."""
    p = r.price
    return bool(r.cached_not_recorded and r.cost and p and p.cached_input is not None and p.cached_input < p.input)


def usage_report(calls: Sequence[Mapping[str, Any]], sessions: Sequence[Mapping[str, Any]],
                 price_of: Callable[[str], Price | None]) -> UsageReport:
    """The usage report of a run directory from its calls ledger and run sessions; ``price_of`` gives each role's
    price. A session killed before it ended counts until its last stored call."""
    roles = {name: role_usage([c for c in calls if c["role"] == name], price_of(name)) for name in ROLES}
    last_call: dict[Any, float] = {}
    for c in calls:
        last_call[c["session"]] = max(last_call.get(c["session"], 0.0), c["created"])
    wall = 0.0
    for s in sessions:  # a killed session has no end: its last stored call stands in
        end = s["ended"] if s["ended"] is not None else last_call.get(s["id"], s["started"])
        wall += max(0.0, end - s["started"])
    costs = [u.cost for u in roles.values()]
    return UsageReport(model=roles["model"], judge=roles["judge"], sessions=len(sessions), wall_seconds=wall,
                       cost=None if any(c is None for c in costs) else sum(c for c in costs if c is not None))


def usage_lines(u: UsageReport) -> list[str]:
    """Plain-text lines for the terminal."""
    lines = []
    for name in ROLES:
        r = u.role(name)
        if r.price is None:  # nothing to price (the offline judge, a baseline) or no price given: no figure
            cost = "cost –" + (" (no price in the config)" if r.prompt_tokens + r.completion_tokens else "")
        else:
            cost = f"cost {r.cost:.4f}"
        failed = f" ({r.failed_calls} failed)" if r.failed_calls else ""
        if upper_bound(r):
            cost += " (an upper bound: cached tokens not recorded for some calls)"
        lines.append(f"{name}: {r.calls} calls{failed}, {r.requests} requests, {r.prompt_tokens:,} prompt + "
                     f"{r.completion_tokens:,} completion tokens ({cached_words(r)}), {r.wall_seconds:.1f} s wall "
                     f"({r.call_seconds:.1f} s in calls), {cost}")
    priced = u.model.price is not None or u.judge.price is not None
    total = "–" if u.cost is None or not priced else f"{u.cost:.4f}"
    lines.append(f"total: {u.sessions} run session(s), {u.wall_seconds:.1f} s wall, cost {total}")
    return lines
