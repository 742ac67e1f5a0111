"""Reproduce the README's dashboard screenshots into docs/screenshots/, in one command.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

It runs the real-browser tests (tests/dashboard/test_browser.py, and
test_browser_graph.py for the 20-agent control-flow graph) with their screenshot folder
pointed at `--out`. Each page is saved at 1440×900 (`<page>.png`, the first screen, which
the README shows) and whole (`<page>-full.png`, 1440 wide). Behind them: a real collector seeded with the dashboard test scenario (one run of
every verdict, plus last week's runs), `handoffscope dashboard` in front of it, and
headless Chromium opening each page. Reusing the test keeps one path that makes pictures,
and the pictures in the README are of a dashboard that just passed its checks.

`CI=1` is set for the run so a missing Chromium is an error here, never a silent skip.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    ROOT / "tests" / "dashboard" / "test_browser.py",  # every page, small scenario
    ROOT / "tests" / "dashboard" / "test_browser_graph.py",  # control flow at 20 agents
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", default=str(ROOT / "docs" / "screenshots"), help="folder for the PNGs"
    )
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HANDOFFSCOPE_SCREENSHOT_DIR=str(out), CI=os.environ.get("CI", "1"))
    command = [
        sys.executable,
        "-m",
        "pytest",
        *map(str, TESTS),
        "-m",
        "browser",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    code = subprocess.call(command, cwd=ROOT, env=env)
    if code == 0:
        for png in sorted(out.glob("*.png")):
            print(f"wrote {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
