from datetime import date

from invoicer.dates import add_months, due_date, in_period, is_overdue


def test_due_date_after_terms():
    assert due_date(date(2026, 1, 15)) == date(2026, 2, 14)


def test_overdue_only_after_the_due_date():
    assert not is_overdue(date(2026, 3, 31), date(2026, 3, 31))
    assert is_overdue(date(2026, 3, 31), date(2026, 4, 1))


def test_period_includes_both_ends():
    march = (date(2026, 3, 1), date(2026, 3, 31))
    assert in_period(date(2026, 3, 1), *march)
    assert in_period(date(2026, 3, 31), *march)
    assert not in_period(date(2026, 4, 1), *march)


def test_add_months_keeps_the_day():
    assert add_months(date(2026, 1, 15), 1) == date(2026, 2, 15)
    assert add_months(date(2026, 11, 15), 3) == date(2027, 2, 15)


def test_add_months_stops_at_the_end_of_a_short_month():
    assert add_months(date(2026, 1, 31), 1) == date(2026, 2, 28)
    assert add_months(date(2028, 1, 31), 1) == date(2028, 2, 29)
