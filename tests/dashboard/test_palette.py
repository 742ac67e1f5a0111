"""The palette, computed: WCAG AA contrast for the text on every verdict badge, and every
pair of colour meanings distinguishable under normal vision and the three common
colour-vision deficiencies.

Simulation: Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for
Simulation of Color Vision Deficiency", full-severity matrices, applied to linear sRGB;
distance: CIE76 ΔE in CIELAB (D65). Verdicts that share a meaning share its colour
(the six boundary failures), and are told apart by their words on every page.
"""

from __future__ import annotations

import itertools
import math

import pytest

from handoffscope.dashboard import style
from handoffscope.instrumentation import semconv as sc

MACHADO = {
    "protanopia": (
        (0.152286, 1.052583, -0.204868),
        (0.114503, 0.786281, 0.099216),
        (-0.003882, -0.048116, 1.051998),
    ),
    "deuteranopia": (
        (0.367322, 0.860646, -0.227968),
        (0.280085, 0.672501, 0.047413),
        (-0.011820, 0.042940, 0.968881),
    ),
    "tritanopia": (
        (1.255528, -0.076749, -0.178779),
        (-0.078411, 0.930809, 0.147602),
        (0.004733, -0.691367, 1.687635),
    ),
}
VISIONS = (None, *MACHADO)


def _linear_rgb(color: str) -> tuple[float, ...]:
    return tuple(style._linear(int(color[i : i + 2], 16)) for i in (1, 3, 5))


def _lab(rgb: tuple[float, ...]) -> tuple[float, float, float]:
    r, g, b = rgb
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))


def seen(color: str, vision: str | None) -> tuple[float, float, float]:
    rgb = _linear_rgb(color)
    if vision is not None:
        m = MACHADO[vision]
        rgb = tuple(min(1.0, max(0.0, sum(m[i][j] * rgb[j] for j in range(3)))) for i in range(3))
    return _lab(rgb)


def test_the_simulation_is_the_published_one() -> None:
    # Known behaviour, so the check below can fail: pure red and green, far apart in
    # normal vision, nearly merge under deuteranopia; white stays white.
    red, green = "#ff0000", "#00ff00"
    normal = math.dist(seen(red, None), seen(green, None))
    deutan = math.dist(seen(red, "deuteranopia"), seen(green, "deuteranopia"))
    assert normal > 80 and deutan < normal / 2
    assert math.dist(seen("#ffffff", "tritanopia"), seen("#ffffff", None)) < 1.0
    assert round(style.contrast("#ffffff", "#000000"), 1) == 21.0
    assert round(style.contrast("#777777", "#ffffff"), 2) == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("verdict", sc.PRECEDENCE)
def test_every_verdict_badge_has_aa_contrast(verdict: str) -> None:
    color = style.verdict_color(verdict)
    assert color in style.COLOR_MEANINGS.values(), f"{verdict}: a colour without a meaning"
    ratio = style.contrast(color, style.text_on(color))
    assert ratio >= style.MIN_CONTRAST, f"{verdict} on {color}: {ratio:.2f}:1"


def test_every_meaning_is_distinguishable_in_every_vision() -> None:
    worst = []
    for (m1, c1), (m2, c2) in itertools.combinations(style.COLOR_MEANINGS.items(), 2):
        for vision in VISIONS:
            d = math.dist(seen(c1, vision), seen(c2, vision))
            worst.append((d, m1, m2, vision or "normal"))
    d, m1, m2, vision = min(worst)
    assert d >= style.MIN_DELTA_E, f"{m1} vs {m2} under {vision}: ΔE {d:.1f}"


def test_one_colour_one_meaning() -> None:
    assert len(set(style.COLOR_MEANINGS.values())) == len(style.COLOR_MEANINGS)
    # Only the six boundary failures share a colour, and it is theirs alone.
    by_color: dict[str, set[str]] = {}
    for verdict in sc.PRECEDENCE:
        by_color.setdefault(style.verdict_color(verdict), set()).add(verdict)
    shared = {c: v for c, v in by_color.items() if len(v) > 1}
    assert shared == {style.FAILURE_RED: set(sc.PRECEDENCE[:6])}
    # Rejection reasons never borrow another meaning's colour.
    others = set(style.COLOR_MEANINGS.values()) - {style.FAILURE_RED}
    assert not others & set(style.REASON_COLORS.values())
