"""Sets of time intervals (seconds), kept as sorted, disjoint ``(start, end)`` pairs."""

from __future__ import annotations

from collections.abc import Iterable

Interval = tuple[float, float]
Intervals = list[Interval]


def union(spans: Iterable[Interval]) -> Intervals:
    """Merge overlapping or touching spans; empty spans are dropped."""
    merged: Intervals = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total(spans: Iterable[Interval]) -> float:
    return sum(end - start for start, end in union(spans))


def intersect(a: Iterable[Interval], b: Iterable[Interval]) -> Intervals:
    a, b = union(a), union(b)
    out: Intervals = []
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Iterable[Interval], b: Iterable[Interval]) -> Intervals:
    """The parts of ``a`` outside ``b``."""
    out: Intervals = []
    cuts = union(b)
    for start, end in union(a):
        cursor = start
        for cut_start, cut_end in cuts:
            if cut_end <= cursor or cut_start >= end:
                continue
            if cut_start > cursor:
                out.append((cursor, cut_start))
            cursor = max(cursor, cut_end)
        if cursor < end:
            out.append((cursor, end))
    return out


def clip(spans: Iterable[Interval], low: float, high: float) -> Intervals:
    """Each span cut to ``[low, high]``, kept apart (not merged); spans outside are dropped."""
    return [(max(s, low), min(e, high)) for s, e in spans if min(e, high) > max(s, low)]
