"""KeySet, the judge's exact membership of stored run keys, against a Python set.

It folds its recent additions into a sorted array by insertion (engine/__init__.py says
why not `np.union1d`); a fold that lost, duplicated or misplaced a key would make the judge
reload a run that was never stored, or start afresh a run whose evidence is stored.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from handoffscope.collector.engine import KeySet

# Few distinct values, so that additions repeat stored keys and each other; the extremes
# of int64 included, where a sign or overflow mistake would show.
keys = st.one_of(st.integers(-50, 50), st.sampled_from([-(2**63), 2**63 - 1, -1, 0, 2**62]))


@settings(max_examples=300, deadline=None)
@given(
    stored=st.lists(keys, max_size=40),
    steps=st.lists(st.tuples(st.booleans(), st.lists(keys, max_size=12)), max_size=30),
    fold_at=st.integers(1, 6),
)
def test_keyset_holds_exactly_the_keys_reset_and_added(
    stored: list[int], steps: list[tuple[bool, list[int]]], fold_at: int
) -> None:
    ks = KeySet()
    ks.FOLD_AT = fold_at  # small, so that the examples fold often
    ks.reset(np.array(stored, dtype=np.int64))
    expected = set(stored)
    probe = sorted({*stored, *(k for _, batch in steps for k in batch), 51, -51})
    for add, batch in steps:
        if add:
            for key in batch:
                ks.add(key)
                expected.add(key)
        assert ks.contains(probe) == [k in expected for k in probe]
        held = ks._sorted
        assert held.dtype == np.int64
        assert bool(np.all(held[1:] > held[:-1])), "sorted and distinct"
        assert set(held.tolist()) | ks._recent == expected
        assert len(ks._recent) < fold_at
    assert ks.contains([]) == []


def test_a_fold_keeps_ten_million_handoffs_worth_of_keys_in_one_pass() -> None:
    # The size the fold was slow at (3.1M runs): the merge must stay exact there too.
    rng = np.random.default_rng(7)
    stored = rng.integers(-(2**63), 2**63 - 1, 3_100_000, dtype=np.int64)
    ks = KeySet()
    ks.reset(np.concatenate([stored, stored[:1000]]))  # duplicates in what is read
    truth = set(stored.tolist())  # a Python set: independent of numpy's sorting
    assert len(ks) == len(truth)
    added = rng.integers(-(2**63), 2**63 - 1, ks.FOLD_AT - 10, dtype=np.int64).tolist()
    for key in [*added, *stored[:10].tolist()]:  # ten of them stored already
        ks.add(key)
    assert not ks._recent, "folded"
    truth.update(added)
    assert len(ks) == len(truth)
    sample = [*added[:500], *stored[-500:].tolist()]
    assert all(ks.contains(sample))
    absent = rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64)
    absent = [k for k in absent.tolist() if k not in truth]
    assert not any(ks.contains(absent))
