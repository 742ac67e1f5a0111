"""The env fixture's own behaviour, offline and in the default suite (no framework installed).

uv builds an env from a requirements file with nothing to download (a comment only), so
these run in a second without the registry: the cache is keyed by the file's bytes, a
finished env is reused, a file uv cannot read gives `EnvUnavailable` with uv's own words and
leaves no half-built env that a later run would take for finished.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from framework_envs import (
    CACHE_ENV_VAR,
    ENVS_DIR,
    FRAMEWORKS,
    EnvUnavailable,
    ensure_env,
    env_key,
)


def write_requirements(envs_dir: Path, name: str, text: str) -> Path:
    (envs_dir / name).mkdir(parents=True, exist_ok=True)
    path = envs_dir / name / "requirements.txt"
    path.write_text(text)
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV_VAR, str(root))
    return root


def test_an_env_is_built_once_and_reused_until_its_requirements_change(
    tmp_path: Path, cache: Path
) -> None:
    envs_dir = tmp_path / "envs"
    reqs = write_requirements(envs_dir, "demo", "# no packages\n")
    first = ensure_env("demo", envs_dir)
    assert first.built_in_s > 0
    assert first.python.is_file()
    assert first.path.parent == cache
    assert (first.path / ".complete").read_text() == reqs.read_text()

    again = ensure_env("demo", envs_dir)
    assert (again.path, again.built_in_s) == (first.path, 0.0)

    reqs.write_text("# no packages, edited\n")
    edited = ensure_env("demo", envs_dir)
    assert edited.path != first.path and edited.built_in_s > 0
    assert sorted(p.name for p in cache.iterdir()) == sorted([first.path.name, edited.path.name])


def test_a_requirements_file_uv_cannot_read_is_a_clear_error_and_leaves_nothing(
    tmp_path: Path, cache: Path
) -> None:
    envs_dir = tmp_path / "envs"
    write_requirements(envs_dir, "broken", "this is not a requirement!!\n")
    with pytest.raises(EnvUnavailable) as raised:
        ensure_env("broken", envs_dir)
    message = str(raised.value)
    assert "requirements.txt" in message and "parse" in message.lower()
    assert [p.name for p in cache.iterdir()] == []  # no staging dir, no env


def test_a_missing_requirements_file_is_named(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(EnvUnavailable, match="no requirements file for 'nothing'"):
        ensure_env("nothing", tmp_path)


def test_the_committed_requirements_are_exact_pins_and_keys_differ() -> None:
    keys = set()
    for name in FRAMEWORKS:
        lines = [
            line.split("#", 1)[0].strip()
            for line in (ENVS_DIR / name / "requirements.txt").read_text().splitlines()
        ]
        pins = [line for line in lines if line]
        assert pins, name
        for pin in pins:
            requirement = pin.split(";", 1)[0].strip()
            assert "==" in requirement and not any(
                op in requirement for op in (">", "<", "~", "*")
            ), pin
        assert (ENVS_DIR / name / "scenario.py").is_file()
        keys.add(env_key(name))
    assert len(keys) == len(FRAMEWORKS)
