"""Deterministic generator of the bundled sample videos.

Each video is fully described by a :class:`VideoSpec`: a list of :class:`Scene` records with
known start/end times and background colours, each holding :class:`Element` records (text,
shapes, vehicles, a rocket ...) whose positions follow linear keyframes. The spec is the
single source of truth: :func:`render_frame` draws frame ``i`` from it with Pillow, and
:func:`write_video` encodes all frames to H.264 (``libx264``, ``yuv420p``) in an MP4 with
PyAV. Nothing random is used except seeded star fields, so the same spec always gives the
same frames.

Times are seconds from the start of the video; frame ``i`` is shown at ``t = i / fps`` and a
video has exactly ``duration * fps`` frames. A scene covers ``start <= t < end`` and the
scenes of a video tile ``[0, duration)`` with hard cuts between them.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from pydantic import BaseModel, ConfigDict, model_validator

RGB = tuple[int, int, int]
Key = tuple[float, float, float]  # (t, x, y)

#: Bump when the drawing code changes in a way the spec does not show (the fingerprint
#: also hashes this module's source, so this is belt and braces).
GENERATOR_VERSION = "1"
#: libx264 options; part of the fingerprint.
ENCODER_OPTIONS: dict[str, str] = {"crf": "20", "preset": "veryfast", "g": "24"}

ElementKind = Literal[
    "text",
    "rect",
    "outline",
    "line",
    "dashes",
    "stars",
    "square",
    "circle",
    "triangle",
    "rocket",
    "car",
    "truck",
    "flag",
]


class Element(BaseModel):
    """One drawable thing. Which fields matter depends on ``kind``.

    - ``text``: ``text`` drawn centred on the position, font ``size`` px.
    - ``rect`` / ``outline`` / ``line`` / ``dashes``: ``box`` = (x0, y0, x1, y1); ``width``.
    - ``stars``: ``count`` white dots placed by ``random.Random(seed)``.
    - ``square`` (side ``size``), ``circle`` (radius ``size``), ``triangle`` (circumradius
      ``size``): centred on the position; ``angle`` keyframes rotate them clockwise.
    - ``rocket``: length ``size``; angle 0 points up, 90 points right; ``flame`` window.
    - ``car`` / ``truck``: side view, length ``size``, ``facing`` +1 right / -1 left,
      ``lights`` = headlights on.
    - ``flag``: pole of height ``size`` standing on the position.

    ``at`` holds (t, x, y) keyframes, linearly interpolated and held before the first and
    after the last. ``bounce`` = (count, height): the element bounces ``count`` times over
    its visible window, rising ``height`` px above its position. ``start``/``end`` limit
    when it is visible (default: the whole scene).
    """

    model_config = ConfigDict(frozen=True)

    kind: ElementKind
    label: str = ""
    color: RGB = (255, 255, 255)
    at: tuple[Key, ...] = ()
    size: float = 0.0
    text: str = ""
    box: tuple[float, float, float, float] | None = None
    width: int = 1
    angle: tuple[tuple[float, float], ...] = ()
    bounce: tuple[int, float] | None = None
    facing: Literal[1, -1] = 1
    lights: bool = False
    flame: tuple[float, float] | None = None
    count: int = 0
    seed: int = 0
    start: float | None = None
    end: float | None = None


class Scene(BaseModel):
    model_config = ConfigDict(frozen=True)

    start: float
    end: float
    background: RGB
    title: str
    description: str
    elements: tuple[Element, ...] = ()


class VideoSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    title: str
    width: int = 480
    height: int = 270
    fps: int = 12
    duration: int
    scenes: tuple[Scene, ...]

    @model_validator(mode="after")
    def _tiles(self) -> VideoSpec:
        t = 0.0
        for s in self.scenes:
            if s.start != t or s.end <= s.start:
                raise ValueError(f"{self.name}: scenes must tile [0, duration) in order")
            t = s.end
        if t != self.duration:
            raise ValueError(f"{self.name}: scenes end at {t}, duration is {self.duration}")
        return self

    @property
    def n_frames(self) -> int:
        return self.duration * self.fps

    def scene_at(self, t: float) -> Scene:
        for s in self.scenes:
            if s.start <= t < s.end:
                return s
        return self.scenes[-1]

    def fingerprint(self) -> str:
        """Hash of everything that determines the encoded file."""
        h = hashlib.sha256()
        h.update(self.model_dump_json().encode())
        h.update(GENERATOR_VERSION.encode())
        h.update(repr(sorted(ENCODER_OPTIONS.items())).encode())
        h.update(_SOURCE_SHA.encode())
        return h.hexdigest()


_SOURCE_SHA = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- drawing


@lru_cache(maxsize=32)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _interp(keys: tuple[tuple[float, ...], ...], t: float) -> tuple[float, ...]:
    if t <= keys[0][0]:
        return keys[0][1:]
    for (t0, *a), (t1, *b) in zip(keys, keys[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
            return tuple(p + (q - p) * f for p, q in zip(a, b, strict=True))
    return keys[-1][1:]


def _transform(pts: list[tuple[float, float]], cx: float, cy: float, deg: float, sx: float = 1.0):
    """Local points (x right, y down) -> image, mirrored by ``sx`` then rotated clockwise."""
    a = math.radians(deg)
    c, s = math.cos(a), math.sin(a)
    return [(cx + (sx * x) * c - y * s, cy + (sx * x) * s + y * c) for x, y in pts]


def _draw_rocket(d: ImageDraw.ImageDraw, el: Element, x: float, y: float, deg: float, t: float) -> None:
    L = el.size
    w = L * 0.28
    top, bottom = -L / 2, L / 2
    nose = top + L * 0.3
    body = [(-w / 2, nose), (w / 2, nose), (w / 2, bottom), (-w / 2, bottom)]
    cone = [(-w / 2, nose), (0, top), (w / 2, nose)]
    fin_l = [(-w / 2, bottom - L * 0.25), (-w / 2 - L * 0.14, bottom), (-w / 2, bottom)]
    fin_r = [(w / 2, bottom - L * 0.25), (w / 2 + L * 0.14, bottom), (w / 2, bottom)]
    if el.flame and el.flame[0] <= t < el.flame[1]:
        flicker = 0.8 + 0.2 * math.sin(t * 25)
        flame = [(-w / 2 + 2, bottom), (0, bottom + L * 0.45 * flicker), (w / 2 - 2, bottom)]
        d.polygon(_transform(flame, x, y, deg), fill=(255, 140, 20))
    d.polygon(_transform(body, x, y, deg), fill=el.color)
    d.polygon(_transform(cone, x, y, deg), fill=(220, 30, 30))
    d.polygon(_transform(fin_l, x, y, deg), fill=(220, 30, 30))
    d.polygon(_transform(fin_r, x, y, deg), fill=(220, 30, 30))
    ((wx, wy),) = _transform([(0, nose + L * 0.15)], x, y, deg)
    r = w * 0.25
    d.ellipse((wx - r, wy - r, wx + r, wy + r), fill=(60, 140, 230))


def _draw_vehicle(d: ImageDraw.ImageDraw, el: Element, x: float, y: float) -> None:
    """Side view; ``y`` is the road line under the wheels."""
    L, f = el.size, el.facing
    h = L * 0.28
    wheel = L * 0.11

    def box(x0: float, y0: float, x1: float, y1: float, fill: RGB) -> None:
        xs = sorted((x + f * x0, x + f * x1))
        d.rectangle((xs[0], y + y0, xs[1], y + y1), fill=fill)

    if el.kind == "car":
        box(-L / 2, -wheel - h, L / 2, -wheel, el.color)
        roof = [
            (-L * 0.3, -wheel - h),
            (-L * 0.18, -wheel - h * 1.9),
            (L * 0.15, -wheel - h * 1.9),
            (L * 0.3, -wheel - h),
        ]
        d.polygon([(x + f * px, y + py) for px, py in roof], fill=el.color)
        win = [
            (-L * 0.2, -wheel - h - 2),
            (-L * 0.13, -wheel - h * 1.75),
            (L * 0.12, -wheel - h * 1.75),
            (L * 0.22, -wheel - h - 2),
        ]
        d.polygon([(x + f * px, y + py) for px, py in win], fill=(170, 210, 240))
    else:  # truck: cargo box behind, cab in front
        box(-L / 2, -wheel - h * 2.2, L * 0.18, -wheel, el.color)
        box(L * 0.2, -wheel - h * 1.5, L / 2, -wheel, el.color)
        box(L * 0.3, -wheel - h * 1.35, L * 0.46, -wheel - h * 0.8, (170, 210, 240))
    for wx in (-L * 0.3, L * 0.3):
        cx = x + f * wx
        d.ellipse((cx - wheel, y - 2 * wheel, cx + wheel, y), fill=(20, 20, 20))
    if el.lights:
        fx = x + f * L / 2
        hy = y - wheel - h * 0.6
        beam = [(fx, hy - 4), (fx + f * L * 0.6, hy - 14), (fx + f * L * 0.6, hy + 14), (fx, hy + 4)]
        d.polygon(beam, fill=(250, 240, 170))
        d.ellipse((fx - 5, hy - 5, fx + 5, hy + 5), fill=(255, 255, 220))


def _draw(d: ImageDraw.ImageDraw, el: Element, scene: Scene, t: float) -> None:
    k = el.kind
    if k in ("rect", "outline", "line", "dashes"):
        assert el.box is not None
        x0, y0, x1, y1 = el.box
        if k == "rect":
            d.rectangle(el.box, fill=el.color)
        elif k == "outline":
            d.rectangle(el.box, outline=el.color, width=el.width)
        elif k == "line":
            d.line(el.box, fill=el.color, width=el.width)
        else:
            n = 12
            for i in range(0, n, 2):
                a, b = i / n, (i + 1) / n
                d.line(
                    (x0 + (x1 - x0) * a, y0 + (y1 - y0) * a, x0 + (x1 - x0) * b, y0 + (y1 - y0) * b),
                    fill=el.color,
                    width=el.width,
                )
        return
    if k == "stars":
        rng = random.Random(el.seed)
        for _ in range(el.count):
            sx, sy = rng.uniform(0, 480), rng.uniform(0, 270)
            r = rng.choice((1, 1, 2))
            d.ellipse((sx - r, sy - r, sx + r, sy + r), fill=el.color)
        return

    x, y = _interp(el.at, t)
    if el.bounce:
        count, height = el.bounce
        t0 = scene.start if el.start is None else el.start
        t1 = scene.end if el.end is None else el.end
        y -= height * abs(math.sin(math.pi * count * (t - t0) / (t1 - t0)))
    deg = _interp(el.angle, t)[0] if el.angle else 0.0

    if k == "text":
        d.text((x, y), el.text, fill=el.color, font=_font(int(el.size)), anchor="mm")
    elif k == "circle":
        r = el.size
        d.ellipse((x - r, y - r, x + r, y + r), fill=el.color)
    elif k == "square":
        h = el.size / 2
        d.polygon(_transform([(-h, -h), (h, -h), (h, h), (-h, h)], x, y, deg), fill=el.color)
    elif k == "triangle":
        r = el.size
        pts = [(r * math.sin(math.radians(a)), -r * math.cos(math.radians(a))) for a in (0, 120, 240)]
        d.polygon(_transform(pts, x, y, deg), fill=el.color)
    elif k == "rocket":
        _draw_rocket(d, el, x, y, deg, t)
    elif k in ("car", "truck"):
        _draw_vehicle(d, el, x, y)
    elif k == "flag":
        d.rectangle((x - 2, y - el.size, x + 2, y), fill=(230, 230, 230))
        d.rectangle((x + 2, y - el.size, x + 2 + el.size * 0.7, y - el.size * 0.55), fill=el.color)
    else:  # pragma: no cover - guarded by the Literal
        raise ValueError(k)


def render_frame(spec: VideoSpec, index: int) -> np.ndarray:
    """RGB ``uint8`` array (height, width, 3) of frame ``index``."""
    t = index / spec.fps
    scene = spec.scene_at(t)
    img = Image.new("RGB", (spec.width, spec.height), scene.background)
    d = ImageDraw.Draw(img)
    for el in scene.elements:
        if (el.start is not None and t < el.start) or (el.end is not None and t >= el.end):
            continue
        _draw(d, el, scene, t)
    return np.asarray(img)


def write_video(spec: VideoSpec, path: Path) -> Path:
    """Encode ``spec`` to ``path`` (H.264 MP4), atomically (temp file + rename)."""
    import av  # imported lazily: only needed when a video is (re)generated

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.mp4")
    try:
        with av.open(str(tmp), mode="w", format="mp4") as container:
            stream = container.add_stream("libx264", rate=spec.fps)
            stream.width = spec.width
            stream.height = spec.height
            stream.pix_fmt = "yuv420p"
            stream.options = dict(ENCODER_OPTIONS)
            for i in range(spec.n_frames):
                frame = av.VideoFrame.from_ndarray(render_frame(spec, i), format="rgb24")
                container.mux(stream.encode(frame))
            container.mux(stream.encode(None))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# ----------------------------------------------------------------------------- the videos

WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)
RED: RGB = (220, 30, 30)
BLUE: RGB = (30, 80, 220)
GREEN: RGB = (30, 170, 60)
YELLOW: RGB = (255, 215, 0)
CAR_YELLOW: RGB = (245, 200, 30)


def _label(text: str, color: RGB, size: int = 36, x: float = 240, y: float = 36, **kw) -> Element:
    return Element(kind="text", label=f'text "{text}"', text=text, color=color, size=size, at=((0, x, y),), **kw)


SHAPES_PARADE = VideoSpec(
    name="shapes_parade",
    title="Shapes parade",
    duration=32,
    scenes=(
        Scene(
            start=0,
            end=8,
            background=(20, 30, 90),
            title="SCENE 1",
            description=(
                'Navy background, white label "SCENE 1". A red square slides from the left edge '
                "to the right edge across the middle at a steady speed."
            ),
            elements=(
                _label("SCENE 1", WHITE),
                Element(kind="square", label="red square", color=RED, size=50, at=((0, 25, 160), (8, 455, 160))),
            ),
        ),
        Scene(
            start=8,
            end=16,
            background=(250, 235, 150),
            title="SCENE 2",
            description=(
                'Pale yellow background, black label "SCENE 2". A blue circle bounces four times '
                "on a brown floor line, staying in the horizontal centre."
            ),
            elements=(
                _label("SCENE 2", BLACK),
                Element(kind="rect", label="brown floor line", color=(120, 80, 40), box=(0, 240, 480, 250)),
                Element(kind="circle", label="blue circle", color=BLUE, size=25, at=((8, 240, 215),), bounce=(4, 120)),
            ),
        ),
        Scene(
            start=16,
            end=24,
            background=(205, 205, 205),
            title="SCENE 3",
            description=(
                'Light grey background, black label "SCENE 3". A green triangle in the centre '
                "rotates clockwise, two full turns."
            ),
            elements=(
                _label("SCENE 3", BLACK),
                Element(
                    kind="triangle",
                    label="green triangle",
                    color=GREEN,
                    size=60,
                    at=((16, 240, 160),),
                    angle=((16, 0), (24, 720)),
                ),
            ),
        ),
        Scene(
            start=24,
            end=32,
            background=(110, 40, 140),
            title="SCENE 4",
            description=(
                'Purple background, white label "SCENE 4". The red square returns and slides from '
                'the right edge to the left edge; "THE END" appears near the bottom at 00:00:29.'
            ),
            elements=(
                _label("SCENE 4", WHITE),
                Element(
                    kind="square", label="red square (returns)", color=RED, size=50, at=((24, 455, 160), (32, 25, 160))
                ),
                _label("THE END", WHITE, size=28, y=240, start=29),
            ),
        ),
    ),
)


def _pitch(score_changes: tuple[tuple[str, float, float], ...]) -> tuple[Element, ...]:
    out = [
        Element(kind="line", label="halfway line", color=WHITE, box=(240, 50, 240, 270), width=3),
        Element(kind="outline", label="left goal", color=WHITE, box=(0, 120, 20, 200), width=3),
        Element(kind="outline", label="right goal", color=WHITE, box=(460, 120, 479, 200), width=3),
    ]
    for text, start, end in score_changes:
        out.append(_label(text, WHITE, size=30, y=25, start=start, end=end))
    return tuple(out)


SCORE_MATCH = VideoSpec(
    name="score_match",
    title="Score match",
    duration=30,
    scenes=(
        Scene(
            start=0,
            end=10,
            background=(40, 140, 60),
            title="first goal",
            description=(
                "Green pitch with a white halfway line and a white goal at each end. A red player "
                "(red circle) dribbles a white ball from the centre into the right goal at 00:00:08; "
                'the scoreboard changes from "SCORE 0-0" to "SCORE 1-0".'
            ),
            elements=(
                *_pitch((("SCORE 0-0", 0, 8), ("SCORE 1-0", 8, 10))),
                Element(kind="circle", label="red player", color=RED, size=16, at=((0, 240, 160), (7.5, 430, 160))),
                Element(
                    kind="circle",
                    label="white ball",
                    color=WHITE,
                    size=7,
                    at=((0, 262, 160), (7.5, 452, 160), (8, 470, 160)),
                ),
            ),
        ),
        Scene(
            start=10,
            end=14,
            background=BLACK,
            title="GOAL!",
            description='Black screen: large yellow "GOAL!" with white "RED TEAM" underneath.',
            elements=(
                _label("GOAL!", YELLOW, size=72, y=115),
                _label("RED TEAM", WHITE, size=28, y=195),
            ),
        ),
        Scene(
            start=14,
            end=24,
            background=(40, 140, 60),
            title="equaliser",
            description=(
                "The pitch again. A blue player (blue circle) dribbles the white ball from the centre "
                'into the left goal at 00:00:22; the scoreboard changes from "SCORE 1-0" to '
                '"SCORE 1-1". The red player stands still near the top of the pitch.'
            ),
            elements=(
                *_pitch((("SCORE 1-0", 14, 22), ("SCORE 1-1", 22, 24))),
                Element(kind="circle", label="red player (standing still)", color=RED, size=16, at=((14, 360, 80),)),
                Element(kind="circle", label="blue player", color=BLUE, size=16, at=((14, 240, 160), (21.5, 50, 160))),
                Element(
                    kind="circle",
                    label="white ball",
                    color=WHITE,
                    size=7,
                    at=((14, 218, 160), (21.5, 28, 160), (22, 10, 160)),
                ),
            ),
        ),
        Scene(
            start=24,
            end=30,
            background=(40, 40, 40),
            title="FULL TIME",
            description='Dark grey screen: white "FULL TIME" and the final score "1-1" in large yellow digits.',
            elements=(
                _label("FULL TIME", WHITE, size=40, y=90),
                _label("1-1", YELLOW, size=72, y=175),
            ),
        ),
    ),
)


ROCKET_COUNTDOWN = VideoSpec(
    name="rocket_countdown",
    title="Rocket countdown",
    duration=36,
    scenes=(
        Scene(
            start=0,
            end=10,
            background=(240, 140, 40),
            title="countdown",
            description=(
                'Orange background, white "COUNTDOWN" at the top and a large white number counting '
                "down from 10 to 1, one number per second (10 at 00:00:00 ... 1 at 00:00:09)."
            ),
            elements=(
                _label("COUNTDOWN", WHITE, size=28, y=40),
                *(_label(str(10 - i), WHITE, size=110, y=160, start=i, end=i + 1) for i in range(10)),
            ),
        ),
        Scene(
            start=10,
            end=20,
            background=(10, 10, 45),
            title="liftoff",
            description=(
                "Starry night sky. A white rocket with a red nose cone stands on a grey launch pad; "
                'at 00:00:12 the yellow word "LIFTOFF" appears and the rocket rises straight up on '
                "an orange flame and is gone off the top of the frame by about 00:00:18."
            ),
            elements=(
                Element(kind="stars", label="stars", color=WHITE, count=40, seed=7),
                Element(kind="rect", label="grey launch pad", color=(130, 130, 130), box=(180, 240, 300, 256)),
                Element(
                    kind="rocket",
                    label="white rocket with red nose cone",
                    color=(240, 240, 240),
                    size=90,
                    at=((10, 240, 195), (12, 240, 195), (18.5, 240, -100)),
                    flame=(12, 20),
                ),
                _label("LIFTOFF", YELLOW, size=32, x=90, y=36, start=12),
            ),
        ),
        Scene(
            start=20,
            end=28,
            background=BLACK,
            title="DAY 3",
            description=(
                "Black space with stars and a large grey moon on the right. The rocket flies "
                'horizontally (nose pointing right) from the left edge towards the moon; white "DAY 3" '
                "in the top-left corner."
            ),
            elements=(
                Element(kind="stars", label="stars", color=WHITE, count=30, seed=11),
                Element(kind="circle", label="grey moon", color=(190, 190, 190), size=70, at=((20, 400, 135),)),
                Element(
                    kind="rocket",
                    label="rocket (flying right)",
                    color=(240, 240, 240),
                    size=90,
                    at=((20, -40, 135), (28, 270, 135)),
                    angle=((20, 90),),
                ),
                _label("DAY 3", WHITE, size=28, x=70, y=30),
            ),
        ),
        Scene(
            start=28,
            end=36,
            background=BLACK,
            title="MISSION COMPLETE",
            description=(
                "Grey lunar surface under a black sky. The rocket stands upright on the surface; a "
                'small yellow flag on a pole appears beside it at 00:00:30; green "MISSION COMPLETE" '
                "at the top."
            ),
            elements=(
                Element(kind="rect", label="grey lunar surface", color=(150, 150, 150), box=(0, 190, 480, 270)),
                Element(kind="rocket", label="rocket (landed)", color=(240, 240, 240), size=90, at=((28, 200, 145),)),
                Element(kind="flag", label="yellow flag", color=YELLOW, size=60, at=((28, 290, 190),), start=30),
                _label("MISSION COMPLETE", (60, 220, 90), size=32, y=40),
            ),
        ),
    ),
)


def _parking_lot(clock: str, clock_color: RGB) -> tuple[Element, ...]:
    out: list[Element] = [
        Element(kind="rect", label="blue sign", color=(30, 60, 180), box=(20, 10, 170, 50)),
        _label("PARKING", WHITE, size=26, x=95, y=30),
        _label(clock, clock_color, size=30, x=420, y=30),
    ]
    for x in (40, 150, 260, 370):
        out.append(Element(kind="line", label="bay line", color=WHITE, box=(x, 110, x, 250), width=4))
    out.append(Element(kind="line", label="bay line", color=WHITE, box=(476, 110, 476, 250), width=4))
    for i, x in enumerate((95, 205, 315, 423), start=1):
        out.append(_label(str(i), WHITE, size=22, x=x, y=238))
    return tuple(out)


CITY_TRAFFIC = VideoSpec(
    name="city_traffic",
    title="City traffic",
    duration=40,
    scenes=(
        Scene(
            start=0,
            end=12,
            background=(150, 200, 240),
            title="street",
            description=(
                "Street under a light blue sky with a grey road and a dashed white lane line. On the "
                "left a traffic light shows red (00:00:00-00:00:05), yellow (00:00:05-00:00:07) and "
                'green (from 00:00:07). A green street sign top right reads "MAIN ST". A yellow car '
                "waits facing right, drives off to the right at 00:00:07 and leaves the frame at about "
                "00:00:11."
            ),
            elements=(
                Element(kind="rect", label="grey road", color=(60, 60, 60), box=(0, 170, 480, 270)),
                Element(kind="dashes", label="lane line", color=WHITE, box=(0, 240, 480, 240), width=4),
                Element(kind="rect", label="traffic light pole", color=BLACK, box=(62, 150, 68, 200)),
                Element(kind="rect", label="traffic light box", color=BLACK, box=(45, 40, 85, 150)),
                *(
                    Element(kind="circle", label="dim lamp", color=(70, 70, 70), size=13, at=((0, 65, y),))
                    for y in (60, 95, 130)
                ),
                Element(kind="circle", label="red lamp", color=(255, 30, 30), size=13, at=((0, 65, 60),), end=5),
                Element(
                    kind="circle", label="yellow lamp", color=(255, 210, 0), size=13, at=((0, 65, 95),), start=5, end=7
                ),
                Element(kind="circle", label="green lamp", color=(30, 230, 60), size=13, at=((0, 65, 130),), start=7),
                Element(kind="rect", label="green street sign", color=(20, 120, 50), box=(330, 20, 460, 60)),
                _label("MAIN ST", WHITE, size=26, x=395, y=40),
                Element(
                    kind="car",
                    label="yellow car",
                    color=CAR_YELLOW,
                    size=90,
                    at=((0, 150, 225), (7, 150, 225), (11, 530, 225)),
                ),
            ),
        ),
        Scene(
            start=12,
            end=24,
            background=(170, 170, 170),
            title="parking lot, morning",
            description=(
                'Parking lot with four numbered bays (1-4), a blue "PARKING" sign top left and a clock '
                'reading "08:15" top right. A blue truck is parked in bay 1. The yellow car enters from '
                "the right and stops in bay 3 at about 00:00:18."
            ),
            elements=(
                *_parking_lot("08:15", BLACK),
                Element(kind="truck", label="blue truck", color=BLUE, size=100, at=((12, 95, 225),)),
                Element(
                    kind="car",
                    label="yellow car",
                    color=CAR_YELLOW,
                    size=90,
                    facing=-1,
                    at=((12, 540, 225), (18, 315, 225)),
                ),
            ),
        ),
        Scene(
            start=24,
            end=28,
            background=BLACK,
            title="LATER THAT DAY",
            description='Black screen with white "LATER THAT DAY".',
            elements=(_label("LATER THAT DAY", WHITE, size=40, y=135),),
        ),
        Scene(
            start=28,
            end=40,
            background=(25, 25, 60),
            title="parking lot, evening",
            description=(
                'The same parking lot at night (dark navy), clock "18:30". The blue truck is gone '
                "(bay 1 empty). The yellow car, headlights on, stays in bay 3 until 00:00:34, then drives "
                "off to the left and leaves the frame at about 00:00:38; the lot is empty at the end."
            ),
            elements=(
                *_parking_lot("18:30", WHITE),
                Element(
                    kind="car",
                    label="yellow car (headlights on)",
                    color=CAR_YELLOW,
                    size=90,
                    facing=-1,
                    lights=True,
                    at=((28, 315, 225), (34, 315, 225), (38, -60, 225)),
                ),
            ),
        ),
    ),
)

ALL_SPECS: tuple[VideoSpec, ...] = (SHAPES_PARADE, SCORE_MATCH, ROCKET_COUNTDOWN, CITY_TRAFFIC)
