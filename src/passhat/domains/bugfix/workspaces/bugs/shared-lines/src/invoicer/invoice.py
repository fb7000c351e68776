"""Invoices: lines, net amount, VAT and total."""

from dataclasses import dataclass
from decimal import Decimal

from invoicer.money import to_money
from invoicer.tax import vat_amount


@dataclass
class Line:
    description: str
    quantity: int
    unit_price: Decimal

    @property
    def net(self) -> Decimal:
        return to_money(self.unit_price * self.quantity)


@dataclass
class Invoice:
    customer: str
    country: str
    lines: list[Line]

    def add_line(self, description: str, quantity: int, unit_price: Decimal) -> Line:
        line = Line(description, quantity, unit_price)
        self.lines.append(line)
        return line

    @property
    def net(self) -> Decimal:
        return sum((line.net for line in self.lines), Decimal("0.00"))

    @property
    def vat(self) -> Decimal:
        return vat_amount(self.net, self.country)

    @property
    def total(self) -> Decimal:
        return self.net + self.vat


def new_invoice(customer: str, country: str, lines: list[Line] = []) -> Invoice:
    """An invoice for `customer` in `country`, with `lines` if given."""
    return Invoice(customer, country, lines)
