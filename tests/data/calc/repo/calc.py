"""A tiny module with one planted bug (``mean`` divides by one too many)."""


def mean(xs: list[float]) -> float:
    return sum(xs) / (len(xs) + 1)
