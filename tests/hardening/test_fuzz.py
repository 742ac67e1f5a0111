"""Coverage-guided fuzzing of decode -> allowlist -> Arrow table (atheris), under `make soak`.

The harness is tests/hardening/fuzz_decode.py (its docstring lists the properties); this
runs it in its own process for a few minutes from a fresh seed corpus and fails with the
crashing input's report if libFuzzer finds one. Hypothesis covers the same ground over the
network in the fast suite (test_bad_input.py); atheris adds coverage feedback, which
finds the inputs that reach deep branches of the allowlist.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).with_name("fuzz_decode.py")
SECONDS = 300


@pytest.mark.soak
@pytest.mark.timeout(SECONDS + 300)
def test_atheris_finds_no_crash_in_decode_and_allowlist(tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris has wheels for Linux x86_64, CPython 3.11-3.13")
    corpus = tmp_path / "corpus"
    done = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            f"-max_total_time={SECONDS}",
            "-max_len=65536",
            "-print_final_stats=1",
            str(corpus),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SECONDS + 240,
    )
    report = done.stderr[-6000:]
    print(report)
    assert done.returncode == 0, report
    assert "DONE" in done.stderr
