"""Small statistics helpers."""


def mean(values):
    return sum(values) / len(values)


def median(values):
    # BUG: no sorting, and the even-length case takes one middle element.
    return values[len(values) // 2]
