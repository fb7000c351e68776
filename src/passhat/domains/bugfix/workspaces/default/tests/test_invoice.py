from decimal import Decimal

from invoicer.invoice import new_invoice


def test_totals():
    invoice = new_invoice("ACME GmbH", "DE")
    invoice.add_line("Widget", 3, Decimal("9.99"))
    invoice.add_line("Setup", 1, Decimal("50"))
    assert invoice.net == Decimal("79.97")
    assert invoice.vat == Decimal("15.19")
    assert invoice.total == Decimal("95.16")


def test_new_invoices_start_empty():
    first = new_invoice("ACME GmbH", "DE")
    first.add_line("Widget", 1, Decimal("5.00"))
    second = new_invoice("Globex BV", "NL")
    assert second.lines == []
