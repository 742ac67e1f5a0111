"""A run's path, summarised: consecutive repeats and cycles folded, so any run draws in a line.

A run of 10,000 handoffs has a path of as many agents; the Run detail page and the API
show it as `triage → (billing → triage) ×4,999 → refunds` instead. The fold is greedy,
left to right: at each position, the block of up to `MAX_BLOCK` agents that repeats
back-to-back the most (by agents covered; the shorter block on a tie) becomes one
segment with its repeat count; an agent that starts no repeat is a segment of its own.
Each position is examined for each block length once per segment it starts, and a fold
skips every position it covers, so the cost is O(MAX_BLOCK × path length) at worst.

Segments beyond `max_segments` are cut (the summary says how many were left off), so a
path of 10,000 distinct agents still answers in bounded size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_BLOCK = 8
"""Longest cycle folded (agents in one repetition)."""
MAX_SEGMENTS = 200
"""Segments in a summary; the rest are counted, not listed."""


def fold(path: Sequence[str], max_block: int = MAX_BLOCK) -> list[tuple[tuple[str, ...], int]]:
    """The path as (block, repeat) segments; expanding them gives the path back."""
    out: list[tuple[tuple[str, ...], int]] = []
    n, i = len(path), 0
    while i < n:
        best_k, best_reps = 1, 1
        for k in range(1, min(max_block, (n - i) // 2) + 1):
            block = path[i : i + k]
            reps = 1
            while i + (reps + 1) * k <= n and path[i + reps * k : i + (reps + 1) * k] == block:
                reps += 1
            if reps > 1 and reps * k > best_reps * best_k:
                best_k, best_reps = k, reps
        out.append((tuple(path[i : i + best_k]), best_reps))
        i += best_k * best_reps
    return out


def summarise(path: Sequence[str], max_segments: int = MAX_SEGMENTS) -> dict[str, Any]:
    """`{segments: [{agents, repeat}], segments_omitted, text}` for the query API."""
    segments = fold(list(path))
    shown = segments[:max_segments]
    parts = []
    for block, reps in shown:
        inner = " → ".join(block)
        if reps == 1:
            parts.append(inner)
        elif len(block) == 1:
            parts.append(f"{inner} ×{reps:,}")
        else:
            parts.append(f"({inner}) ×{reps:,}")
    omitted = len(segments) - len(shown)
    text = " → ".join(parts)
    if omitted:
        text += f" → … ({omitted:,} more segments)"
    return {
        "segments": [{"agents": list(b), "repeat": r} for b, r in shown],
        "segments_omitted": omitted,
        "text": text,
    }
