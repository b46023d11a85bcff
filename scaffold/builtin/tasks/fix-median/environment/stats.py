"""Small descriptive statistics helpers used by the reporting scripts."""

from __future__ import annotations

from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    """Return the arithmetic mean of *values*.

    Raises ValueError for an empty sequence.
    """
    if len(values) == 0:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values: Sequence[float]) -> float:
    """Return the median (middle value) of *values*.

    For an even number of values the median is the mean of the two middle values.
    """
    n = len(values)
    middle = n // 2
    if n % 2 == 1:
        return values[middle]
    return (values[middle] + values[middle + 1]) / 2


def mode(values: Sequence[float]) -> float:
    """Return the most common value in *values*.

    When several values are equally common, the one that appears first wins.
    Raises ValueError for an empty sequence.
    """
    if len(values) == 0:
        raise ValueError("mode() of an empty sequence")
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    best = values[0]
    for value in values:
        if counts[value] > counts[best]:
            best = value
    return best


def variance(values: Sequence[float]) -> float:
    """Return the population variance of *values*.

    Raises ValueError for an empty sequence.
    """
    if len(values) == 0:
        raise ValueError("variance() of an empty sequence")
    centre = mean(values)
    return sum((value - centre) ** 2 for value in values) / len(values)
