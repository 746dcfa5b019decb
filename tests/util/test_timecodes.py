"""Time ranges read from dialogue text in every form the data writes (``util.timecodes``)."""

from __future__ import annotations

import pytest

from mtvbench.util.timecodes import POINT_MARGIN_S, frame_label, named_ranges, segments

M = POINT_MARGIN_S


@pytest.mark.parametrize(("text", "expected"), [
    ("In the video clip from 00:03:06 to 00:03:55, what is the man holding?", [(186, 235)]),
    ("Based on the video clip from 00:00:00 to 00:00:49, describe it.", [(0, 49)]),
    ("What happens from 1:02:03 to 1:02:10?", [(3723, 3730)]),
    ("During 03:06–03:55 the dog runs.", [(186, 235)]),
    ("During 3:06-3:55 the dog runs.", [(186, 235)]),
    ("During 03:06 — 03:55 and 04:00~04:10.", [(186, 235), (240, 250)]),
    ("Between 1:05 and 1:30 the car turns.", [(65, 90)]),
    ("What is shown at 00:00:58?", [(58 - M, 58 + M)]),
    ("What is shown at 03:12 in the video?", [(192 - M, 192 + M)]),
    ("Look around the 3:12 mark.", [(192 - M, 192 + M)]),
    ("What does the sign at timestamp 3:12 say?", [(192 - M, 192 + M)]),
    ("What happens at 0:45 of the clip?", [(45 - M, 45 + M)]),
    ("What is shown at 00:00:58.5?", [(58.5 - M, 58.5 + M)]),
])
def test_every_form_is_read(text: str, expected: list[tuple[float, float]]) -> None:
    got = named_ranges(text, duration_s=10_000)
    assert [(r.start, r.end) for r in got.ranges] == [(float(a), float(b)) for a, b in expected]


@pytest.mark.parametrize("text", [
    "The meeting starts at 8:15 pm.",          # clock times after "at"
    "The meeting starts at 08:15 sharp.",
    "The meeting starts at 08:15 a.m.",
    "The sign says 08:15.",                    # a lone MM:SS without a grounding word
    "It opens at 9:30 o'clock.",
    "The score was 10:00 and 11:00 later.",    # two clock times joined by a bare "and"
    "No time is named here.",
    "",
])
def test_clock_times_and_plain_text_name_no_range(text: str) -> None:
    assert named_ranges(text, duration_s=10_000).ranges == []


def test_ranges_past_the_end_are_clipped_and_counted() -> None:
    got = named_ranges("from 00:00:50 to 00:01:30, then 00:05:00 to 00:06:00, and at 00:00:58", duration_s=60)
    # 50-90 cut at 60; 300-360 is wholly after the end; the point 58 +- 5 cut at 60 and merged with the first
    assert [(r.start, r.end) for r in got.ranges] == [(50.0, 60.0)]
    assert got.clipped == 2 and got.outside == 1


def test_overlapping_ranges_are_merged_and_sorted() -> None:
    got = named_ranges("00:00:30 to 00:00:40; earlier 0:10-0:20 and 0:15 ~ 0:35", duration_s=100)
    assert [(r.start, r.end) for r in got.ranges] == [(10.0, 40.0)]
    assert got.seconds == 30.0


def test_a_point_near_the_start_does_not_go_negative() -> None:
    got = named_ranges("at 00:00:02", duration_s=100)
    assert [(r.start, r.end) for r in got.ranges] == [(0.0, 2 + M)]


def test_review_chips_still_take_ranges_and_long_points() -> None:
    marks = [(s.start, s.end) for s in segments("from 00:01:20 to 00:01:45 and at 00:02:00, not 08:15")
             if s.start is not None]
    assert marks == [(80.0, 105.0), (120.0, None)]


def test_frame_label() -> None:
    assert frame_label(192.7) == "Frame at 00:03:12"
