"""The one options convention (handoffscope.instrumentation.options) on a config of its own."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from handoffscope.instrumentation import options
from handoffscope.instrumentation.options import option, positive_int, url


@dataclass(frozen=True)
class ToyConfig:
    size: int = option(3, "How many.", type=positive_int, metavar="N")
    name: str = option("x", "A name.", env="TOY_NAME")
    hooks: tuple[str, ...] = option((), "Webhooks.", type=url, repeatable=True)
    quiet: bool = option(False, "Say less.")
    secret: str = option("", "A secret.", flag=None)
    derived: int = 0
    """Not an option: a plain field keeps its default and is not on the command line."""


def parse(argv: list[str], env: dict[str, str]) -> ToyConfig:
    parser = options.build_parser(ToyConfig, prog="toy", description="Toy.", environ=env)
    return options.parse(ToyConfig, parser, argv, env)


def test_names_flags_and_variables_derive_from_the_field() -> None:
    found = {o.name: o for o in options.options_of(ToyConfig)}
    assert list(found) == ["size", "name", "hooks", "quiet", "secret"]
    assert (found["size"].flag, found["size"].env_var) == ("--size", "HANDOFFSCOPE_SIZE")
    assert found["name"].env_var == "TOY_NAME"
    assert found["secret"].flag is None and found["quiet"].switch


def test_flag_wins_over_variable_over_default() -> None:
    assert parse([], {}) == ToyConfig()
    assert parse([], {"HANDOFFSCOPE_SIZE": "5"}).size == 5
    assert parse(["--size", "7"], {"HANDOFFSCOPE_SIZE": "5"}).size == 7
    assert parse([], {"TOY_NAME": "y"}).name == "y"
    assert parse([], {"HANDOFFSCOPE_SECRET": "s"}).secret == "s"


def test_repeatable_values_from_the_variable_are_replaced_by_the_flag() -> None:
    env = {"HANDOFFSCOPE_HOOKS": "http://a.example http://b.example"}
    assert parse([], env).hooks == ("http://a.example", "http://b.example")
    assert parse(["--hooks", "http://c.example"], env).hooks == ("http://c.example",)


@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        (["--size", "0"], {}, "--size: must be >= 1"),
        ([], {"HANDOFFSCOPE_SIZE": "many"}, "HANDOFFSCOPE_SIZE='many'"),
        ([], {"HANDOFFSCOPE_QUIET": "sometimes"}, "must be 1/true/yes/on or 0/false/no/off"),
        ([], {"HANDOFFSCOPE_HOOKS": "ftp://a"}, "must be an http:// or https:// URL"),
    ],
)
def test_bad_values_are_usage_errors_naming_the_input(argv, env, said, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(argv, env)
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err


def test_the_table_lists_every_option_once_with_its_default() -> None:
    table = options.markdown_table(ToyConfig)
    rows = table.splitlines()[2:]
    assert len(rows) == 5
    assert "| `--size` | `HANDOFFSCOPE_SIZE` | `3` | How many. |" in rows
    assert "| `--quiet` | `HANDOFFSCOPE_QUIET` | `off` | Say less. |" in rows
    assert "| (none: environment only) | `HANDOFFSCOPE_SECRET` | (unset) | A secret. |" in rows
