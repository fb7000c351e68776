"""Small helpers for writing invoices: money, dates, text, VAT, totals and report figures."""

__version__ = "0.4.1"
