"""VAT on invoice amounts, at the generated rates of `invoicer._rates`."""

from decimal import Decimal

from invoicer._rates import rate
from invoicer.money import to_money


def vat_amount(net: Decimal, country: str) -> Decimal:
    """The VAT on `net` for a customer in `country` (an ISO code in any case: "nl", "NL")."""
    return to_money(net * rate(country))
