"""Money amounts as Decimal, rounded the way invoices are."""

from decimal import ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")


def to_money(value: Decimal | int | str) -> Decimal:
    """`value` rounded to the cent, half up as on invoices: 0.125 -> 0.13."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_EVEN)


def split_evenly(total: Decimal, parts: int) -> list[Decimal]:
    """`total` split into `parts` amounts that differ by at most a cent and add up to `total`."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    cents, extra = divmod(int(to_money(total) * 100), parts)
    return [Decimal(cents + (i < extra)) / 100 for i in range(parts)]


def format_money(amount: Decimal, currency: str = "EUR") -> str:
    """`amount` as printed on an invoice: thousands separated, two decimals, the currency last."""
    return f"{to_money(amount):,.2f} {currency}"
