"""The price book (prices.py): the operator's file first, then genai-prices' shipped table;
an unknown model is unpriced, never guessed; a bad file stops the collector with the reason."""

from __future__ import annotations

import datetime as dt
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from handoffscope.collector.engine.worker import ProcessEngine
from handoffscope.collector.prices import PriceBook, PriceFileError, parse

NS = 10**9

FILE = """
# negotiated, and a private model the table cannot know
[models."gpt-4o"]
input_per_mtok = 2.0
output_per_mtok = 8

[models."acme-support-ft"]
input_per_mtok = 0.30
output_per_mtok = 1.20
"""


@pytest.fixture
def prices_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(FILE)
    return path


def table(model: str, tin: int, tout: int, **kw) -> float:
    return float(
        calc_price(Usage(input_tokens=tin, output_tokens=tout), model_ref=model, **kw).total_price
    )


def test_the_table_prices_a_listed_model_as_genai_prices_does() -> None:
    book = PriceBook.load()
    assert book.source.startswith("genai-prices ")
    for model in ("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet-latest", "gemini-2.0-flash"):
        got = book.cost(model, 1_000, 500)
        assert got is not None and got > 0, model
        assert got == pytest.approx(table(model, 1_000, 500)), model
    # The cache answers the same figure again, and more tokens cost more.
    assert book.cost("gpt-4o", 1_000, 500) == book.cost("gpt-4o", 1_000, 500)
    assert book.cost("gpt-4o", 2_000, 1_000) == pytest.approx(2 * book.cost("gpt-4o", 1_000, 500))
    # Only input, or only output, reported: the other side counts as none.
    assert book.cost("gpt-4o", 1_000, None) == pytest.approx(table("gpt-4o", 1_000, 0))


def test_a_call_is_priced_at_its_own_day() -> None:
    book = PriceBook.load()
    when = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    at_ns = int(when.timestamp()) * NS + 5 * 3600 * NS  # 05:00 that day
    assert book.cost("gpt-4o", 10_000, 0, at_ns) == pytest.approx(
        table("gpt-4o", 10_000, 0, genai_request_timestamp=when)
    )


def test_a_provider_prefixed_name_is_looked_up_under_its_provider() -> None:
    book = PriceBook.load()
    assert book.cost("openai/gpt-4o", 1_000, 500) == pytest.approx(table("gpt-4o", 1_000, 500))


@pytest.mark.parametrize(
    ("model", "tin", "tout"),
    [
        ("scripted-triage", 100, 10),  # a name no table knows
        ("acme/private-model", 100, 10),  # a prefix that is no provider, a model nobody lists
        (None, 100, 10),  # the call named no model
        ("", 100, 10),
        ("gpt-4o", None, None),  # no token counts: a call counted, not priced
    ],
)
def test_what_cannot_be_priced_is_none_never_a_guess(model, tin, tout) -> None:
    assert PriceBook.load().cost(model, tin, tout) is None


def test_the_file_comes_first_and_prices_what_the_table_cannot(prices_file: Path) -> None:
    book = PriceBook.load(prices_file)
    assert book.cost("gpt-4o", 1_000_000, 500_000) == pytest.approx(2.0 + 4.0)
    assert book.cost("acme-support-ft", 2_000_000, 1_000_000) == pytest.approx(0.6 + 1.2)
    assert book.known("acme-support-ft") and not PriceBook.load().known("acme-support-ft")
    # A model not in the file: the table.
    assert book.cost("gpt-4o-mini", 1_000, 500) == pytest.approx(table("gpt-4o-mini", 1_000, 500))
    assert f"2 model(s) from {prices_file}" in book.source
    assert PriceBook.load(str(prices_file)) is book  # read once per path


def test_the_book_pickles_as_its_path_and_a_judge_worker_prices_with_it(
    prices_file: Path,
) -> None:
    """The judge's worker processes get the engine's settings pickled (engine/worker.py):
    the price function travels as the file's path and is read again there."""
    cost = PriceBook.load(prices_file).cost
    body = pickle.dumps(cost)
    assert len(body) < 500 and FILE.split()[1].encode() not in body  # a path, not the rates
    script = (
        "import pickle, sys\n"
        "cost = pickle.loads(sys.stdin.buffer.read())\n"
        "print(cost('acme-support-ft', 1_000_000, 0), cost('nobody-knows', 1, 1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=body, capture_output=True, timeout=120, check=True
    )
    assert done.stdout.decode().split() == ["0.3", "None"]
    # And a ProcessEngine accepts it among its settings (the worker unpickles them).
    engine = ProcessEngine(grace_seconds=30, price=cost)
    assert pickle.loads(pickle.dumps(engine.settings))["price"]("acme-support-ft", 0, 10**6) == (
        pytest.approx(1.2)
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.x\n", "not TOML"),
        ('[prices."x"]\ninput_per_mtok = 1\n', "unknown top-level keys ['prices']"),
        ('models = "gpt-4o"\n', "`models` must be a table"),
        ('[models."x"]\ninput_per_mtok = 1\n', '[models."x"]: output_per_mtok is missing'),
        (
            '[models."x"]\ninput_per_mtok = 1\noutput_per_mtok = 2\ncurrency = "EUR"\n',
            "unknown keys ['currency']",
        ),
        (
            '[models."x"]\ninput_per_mtok = "1.5"\noutput_per_mtok = 2\n',
            "must be a number, got '1.5'",
        ),
        (
            '[models."x"]\ninput_per_mtok = true\noutput_per_mtok = 2\n',
            "must be a number, got True",
        ),
        (
            '[models."x"]\ninput_per_mtok = -1\noutput_per_mtok = 2\n',
            "must be a finite number >= 0",
        ),
        (
            '[models."x"]\ninput_per_mtok = nan\noutput_per_mtok = 2\n',
            "must be a finite number >= 0",
        ),
        (
            '[models."  "]\ninput_per_mtok = 1\noutput_per_mtok = 2\n',
            "a model name cannot be empty",
        ),
        ("[models]\nx = 3\n", '[models."x"]: must be a table'),
    ],
)
def test_a_bad_file_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PriceFileError) as err:
        parse(text, "prices.toml")
    assert str(err.value).startswith("prices.toml: ")
    assert message in str(err.value)


def test_an_empty_file_prices_from_the_table_alone() -> None:
    assert parse("") == {}
    assert parse("# nothing negotiated yet\n") == {}


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PriceFileError, match="cannot read it"):
        PriceBook.load(tmp_path / "nope.toml")


def test_a_bad_prices_file_stops_the_collector_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "prices.toml"
    bad.write_text('[models."gpt-4o"]\ninput_per_mtok = -2\noutput_per_mtok = 8\n')
    done = subprocess.run(
        [sys.executable, "-m", "handoffscope.collector", "--db", str(tmp_path / "h.duckdb"),
         "--http-port", "0", "--grpc-port", "0", "--prices", str(bad)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        f'handoffscope collector: --prices {bad}: [models."gpt-4o"]: input_per_mtok must be a '
        "finite number >= 0, got -2" in done.stderr
    )
    assert not (tmp_path / "h.duckdb").exists(), "refused before opening the store"


def reference(model: str, tin: int, tout: int) -> float | None:
    """genai-prices' own answer, as the docs promise the book asks it: `provider/model`
    under that provider first, then the name as given."""
    provider, slash, rest = model.partition("/")
    tries = [{"provider_id": provider, "model": rest}] if slash and provider and rest else []
    for kw in [*tries, {"model": model}]:
        try:
            return table(kw.pop("model"), tin, tout, **kw)
        except (LookupError, ValueError):
            continue
    return None


def test_every_model_in_the_table_is_priced_as_genai_prices_prices_it() -> None:
    """The book reads a linear price once per model and day and applies it itself (the
    table's own calculation is slow); a tiered one it leaves to the table. Either way every
    model the shipped table lists, at small and large prompts (past the usual 128k/200k
    tiers), costs what genai-prices says, and a model it cannot match is None for both."""
    from genai_prices import data_snapshot

    book = PriceBook.load()
    names = sorted({m.id for p in data_snapshot.get_snapshot().providers for m in p.models})
    assert len(names) > 500
    checked = 0
    for model in names:
        for tin, tout in ((1_234, 567), (250_000, 4_321), (0, 10)):
            want = reference(model, tin, tout)
            got = book.cost(model, tin, tout)
            if want is None:
                assert got is None, model
            else:
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (model, tin, tout)
                checked += 1
    assert checked > 1000
