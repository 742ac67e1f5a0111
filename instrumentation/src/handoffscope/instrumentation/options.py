"""The one convention for what users set on handoffscope's commands.

A command's options are ONE frozen dataclass (`CollectorConfig`, `DashboardConfig`,
`DemoConfig`) whose fields are declared with `option(default, help, ...)`: the field's
name, default, help, command-line flag, environment variable and converter are written
once, there, and everything else derives from it — the argparse parser (`build_parser`),
the parsed value (`parse`), the `--help` text and the documentation table
(`markdown_table`, which each command's docs test compares with its page).

Rules, the same for every command:

- The flag is `--<field name with dashes>`, the variable `HANDOFFSCOPE_<FIELD NAME>`; a
  field may name others (`env=`), or have no flag at all (`flag=None`: secrets, which `ps`
  would show on a command line).
- The flag wins over the variable, the variable over the default. A bad value in either is
  a usage error (exit 2) naming the flag or the variable and the reason.
- A boolean is a switch (`--no-dashboard`); its variable reads 1/true/yes/on or
  0/false/no/off (anything else is an error, not "false").
- A repeatable option is given once per value; its variable holds the values separated by
  whitespace, and the flag, when given, replaces them.

It lives in the instrumentation distribution because that is the one every part depends
on (the dashboard does not install the collector); it needs only the standard library.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

ENV_PREFIX = "HANDOFFSCOPE_"
_KEY = "handoffscope.option"

C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
class Option:
    """One user-facing option: everything `option()` declared plus the field's name."""

    name: str
    default: Any
    help: str
    type: Callable[[str], Any]
    flag: str | None
    env_var: str
    metavar: str
    repeatable: bool

    @property
    def switch(self) -> bool:
        return self.type is boolean

    @property
    def shown_default(self) -> str:
        return shown(self.default)


def option(
    default: Any,
    help: str,
    *,
    type: Callable[[str], Any] | None = None,
    flag: str | None | bool = True,
    env: str = "",
    metavar: str = "VALUE",
    repeatable: bool = False,
) -> Any:
    """A dataclass field that is a user-facing option (see the module docstring).

    `type` converts the flag's or the variable's text and says why it refuses one (a
    ValueError's message); by default the default's own type (`boolean` for a bool).
    `flag=None` (or False) means environment only; a string names the flag.
    """
    spec = {
        "help": help,
        "type": type,
        "flag": flag,
        "env": env,
        "metavar": metavar,
        "repeatable": repeatable,
    }
    return dataclasses.field(default=default, metadata={_KEY: spec})


def options_of(config: type) -> tuple[Option, ...]:
    """The options of a config dataclass, in field order."""
    found = []
    for f in dataclasses.fields(config):
        spec = f.metadata.get(_KEY)
        if spec is None:
            continue
        convert = spec["type"] or _type_of(f.default)
        flag = spec["flag"]
        if flag is True:
            flag = "--" + f.name.replace("_", "-")
        elif flag is False:
            flag = None
        found.append(
            Option(
                name=f.name,
                default=f.default,
                help=spec["help"],
                type=convert,
                flag=flag,
                env_var=spec["env"] or ENV_PREFIX + f.name.upper(),
                metavar=spec["metavar"],
                repeatable=spec["repeatable"],
            )
        )
    return tuple(found)


def _type_of(default: Any) -> Callable[[str], Any]:
    if isinstance(default, bool):
        return boolean
    if isinstance(default, (int, float)):
        return type(default)
    return str


def build_parser(
    config: type,
    *,
    prog: str,
    description: str,
    epilog: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> argparse.ArgumentParser:
    """The command's parser: one argument per option with a flag, its default read from
    `environ` (os.environ when None) where the variable is set."""
    env = os.environ if environ is None else environ
    only_env = [o for o in options_of(config) if o.flag is None]
    if only_env:
        listed = "; ".join(f"{o.env_var} - {o.help}" for o in only_env)
        epilog = (
            f"{epilog}\n\nEnvironment only: {listed}" if epilog else f"Environment only: {listed}"
        )
    parser = argparse.ArgumentParser(
        prog=prog,
        description=_fill(description),
        epilog=_fill(epilog) if epilog else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for o in options_of(config):
        if o.flag is None:
            continue
        default = o.default
        if o.env_var in env:
            try:
                default = _from_env(o, env[o.env_var])
            except ValueError as exc:
                parser.error(f"{o.env_var}={env[o.env_var]!r}: {exc}")
        if o.switch:
            parser.add_argument(
                o.flag,
                dest=o.name,
                action="store_true",
                default=default,
                help=f"{o.help} [env {o.env_var}=1]",
            )
        elif o.repeatable:
            parser.add_argument(
                o.flag,
                dest=o.name,
                type=_argparse_type(o),
                action="append",
                default=None,
                metavar=o.metavar,
                help=f"{o.help} [env {o.env_var}, whitespace-separated; default none]",
            )
            parser.set_defaults(**{_env_dest(o): default})
        else:
            parser.add_argument(
                o.flag,
                dest=o.name,
                type=_argparse_type(o),
                default=default,
                metavar=o.metavar,
                help=f"{o.help} [env {o.env_var}; default {shown(o.default) or 'none'}]",
            )
    return parser


def parse(
    config: type[C],
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> C:
    """Parse `argv` with `parser` (from `build_parser(config, ...)`) into a `config`."""
    env = os.environ if environ is None else environ
    values = vars(parser.parse_args(argv))
    for o in options_of(config):
        if o.repeatable and o.flag is not None:
            from_env = values.pop(_env_dest(o))
            given = values[o.name]
            values[o.name] = tuple(given) if given is not None else from_env
        elif o.flag is None:
            text = env.get(o.env_var)
            try:
                values[o.name] = o.default if text is None else _from_env(o, text)
            except ValueError as exc:
                parser.error(f"{o.env_var}: {exc}")  # the value may be a secret: not echoed
    return config(**values)


def markdown_table(config: type) -> str:
    """The options as the Markdown table the command's documentation page carries."""
    lines = [
        "| flag | environment variable | default | meaning |",
        "|---|---|---|---|",
    ]
    for o in options_of(config):
        flag = f"`{o.flag}`" if o.flag else "(none: environment only)"
        default = f"`{shown(o.default)}`" if o.default not in ("", (), None) else "(unset)"
        lines.append(f"| {flag} | `{o.env_var}` | {default} | {o.help} |")
    return "\n".join(lines) + "\n"


def shown(value: Any) -> str:
    """A default as it is usually written on a command line: 30.0 as "30"."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return ",".join(value)
    if value is None:
        return ""
    return str(value)


def _fill(text: str) -> str:
    # Paragraphs wrapped to a terminal's width; a line starting with spaces (a usage
    # example) is kept as written.
    out = []
    for para in text.split("\n\n"):
        if para.startswith(" "):
            out.append(para)
        else:
            out.append(textwrap.fill(" ".join(para.split()), width=88))
    return "\n\n".join(out)


def _env_dest(o: Option) -> str:
    return f"_{o.name}_env"


def _from_env(o: Option, text: str) -> Any:
    if o.repeatable:
        return tuple(o.type(part) for part in text.split())
    return o.type(text)


def _argparse_type(o: Option) -> Callable[[str], Any]:
    # argparse reports a ValueError as "invalid <name> value" and hides the reason;
    # ArgumentTypeError keeps it.
    def convert(text: str) -> Any:
        try:
            return o.type(text)
        except ValueError as exc:
            # argparse already says "argument --flag:"; the reason alone follows it.
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = o.name
    return convert


# --- converters shared by the commands ---------------------------------------------------


def _whole(text: str) -> int:
    """int(text), with a sentence a person reads rather than Python's "invalid literal"."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"must be a whole number, got {text!r}") from None


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None


def boolean(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"must be 1/true/yes/on or 0/false/no/off, got {text!r}")


def port(text: str) -> int:
    value = _whole(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"must be a TCP port 0-65535, got {value}")
    return value


def positive_int(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise ValueError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise ValueError(f"must be >= 0, got {value}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text)
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"must be >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text)
    if not value > 0:  # also refuses NaN
        raise ValueError(f"must be > 0, got {text}")
    return value


def url(text: str) -> str:
    value = text.strip()
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError(f"must be an http:// or https:// URL, got {text!r}")
    return value


def optional_url(text: str) -> str:
    return url(text) if text.strip() else ""


def hosts(text: str) -> str:
    names = [h.strip() for h in text.split(",") if h.strip()]
    if not names:
        raise ValueError("must name at least one host (or `*` for any)")
    return ",".join(names)
