"""One way to stop a run (``Runner.stop``): whoever reports an error (the store, a circuit breaker, a
dispatcher), the run stops asking and raises one error at the end: the first reported, except that an error
other than an open breaker (a store that cannot be written) wins over an open breaker, in either order."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mtvbench.errors import MtvbenchError, OutputError
from mtvbench.models.resilience import CircuitOpenError
from mtvbench.run.runner import Runner


def _runner() -> Any:
    runner: Any = Runner.__new__(Runner)  # the stopping part only
    runner._stopped_by = None
    return runner


def _errors() -> dict[str, MtvbenchError]:
    return {"disk full": OutputError("store.sqlite: disk full"), "disk gone": OutputError("store.sqlite: gone"),
            "model breaker": CircuitOpenError("model endpoint keeps failing"),
            "judge breaker": CircuitOpenError("judge endpoint keeps failing")}


@pytest.mark.parametrize("order", list(itertools.permutations(["disk full", "disk gone", "model breaker",
                                                                "judge breaker"], 2)))
def test_the_error_raised_is_the_first_reported_and_a_store_error_wins_over_an_open_breaker(
        order: tuple[str, str]) -> None:
    errors, runner = _errors(), _runner()
    assert not runner.stopped
    for name in order:
        runner.stop(errors[name])
        assert runner.stopped  # no new call starts from the first report on
    first, second = order
    expected = second if "breaker" in first and "breaker" not in second else first
    assert runner._stopped_by is errors[expected]


def test_an_error_that_is_not_mtvbenchs_is_raised_at_once_and_does_not_stop_the_run() -> None:
    runner = _runner()
    with pytest.raises(KeyError, match="a bug"):
        runner.stop(KeyError("a bug"))
    assert not runner.stopped
