"""Due dates, billing periods and month arithmetic."""

import calendar
from datetime import date, timedelta


def due_date(issued: date, terms_days: int = 30) -> date:
    """The day payment is due: `terms_days` after the invoice was issued."""
    return issued + timedelta(days=terms_days)


def is_overdue(due: date, today: date) -> bool:
    """True once `today` is past the due date; on the due date itself the invoice is on time."""
    return today > due


def in_period(day: date, start: date, end: date) -> bool:
    """Whether `day` falls in the billing period from `start` to `end`, both ends inclusive."""
    return start <= day < end


def add_months(day: date, months: int) -> date:
    """The same day `months` later, or that month's last day if it is shorter (Jan 31 + 1 -> Feb 28)."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))
