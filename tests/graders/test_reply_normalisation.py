"""``reply_contains`` / ``reply_not_contains`` with ``normalize``: numbers by value, whitespace, Unicode width."""

from __future__ import annotations

from typing import Any

import pytest

from passhat.cases import Case
from passhat.episode import Message, Usage
from passhat.graders.base import TrialView
from passhat.graders.reply import grade_reply
from passhat.world.diff import Diff


def grade(replies: list[str], assertion: dict[str, Any]) -> tuple[bool, str]:
    case = Case.model_validate({"id": "c", "domain": "refunds", "instruction": "Refund me.", "assertions": [assertion]})
    view = TrialView(case=case, calls=[], messages=[Message(role="agent", text=r) for r in replies], diff=Diff(),
                     end_reason="completed", usage=Usage(), agent_seconds=0.0, query=None)
    (g,) = grade_reply(view)
    return g.passed, g.reason


def found(reply: str, text: str, *normalize: str, case_sensitive: bool = False) -> bool:
    contains = grade([reply], {"reply_contains": {"text": text, "normalize": list(normalize), "case_sensitive": case_sensitive}})
    absent = grade([reply], {"reply_not_contains": {"text": text, "normalize": list(normalize),
                                                    "case_sensitive": case_sensitive}})
    assert contains[0] != absent[0]  # the two kinds always disagree
    return contains[0]


@pytest.mark.parametrize(("reply", "text"), [
    ("Your refund of 1234.5 CNY is approved.", "1,234.50"),
    ("Your refund of 1,234.50 CNY is approved.", "1234.5"),
    ("Total: $1,234,567.00", "1234567"),
    ("refund 38.50", "38.5"),
    ("refund 0038", "38"),
    ("INV-102 was approved", "inv-102"),
    ("Refund of 1,234.5 approved.", "of 1234.50 approved"),
])
def test_numbers_match_by_value(reply: str, text: str) -> None:
    assert found(reply, text, "numbers")
    assert found(reply, text) == (text.lower() in reply.lower())  # without the option: a plain substring, as before


@pytest.mark.parametrize(("reply", "text"), [
    ("Your refund of 11234.56 is approved.", "1234.5"),  # inside a longer number
    ("Your refund of 1234.56 is approved.", "1234.5"),
    ("Your refund of 21,234.50 is approved.", "1,234.50"),
    ("Order 1234 is ready", "123"),
    ("Version 1,2345", "12345"),  # not a thousands separator: 1 and 2345
    ("Refund 1234.5", "1234.50 CNY"),
])
def test_numbers_never_match_inside_another_number_or_a_different_value(reply: str, text: str) -> None:
    assert not found(reply, text, "numbers")


def test_whitespace_runs_collapse() -> None:
    assert found("Your claim was\n  approved  today.", "was approved today", "whitespace")
    assert not found("Your claim was\n  approved  today.", "was approved today")
    assert not found("Your claim was approved.", "wasapproved", "whitespace")


def test_each_message_is_searched_on_its_own_when_normalising() -> None:
    passed, _ = grade(["It was", "approved."], {"reply_contains": {"text": "was approved", "normalize": ["whitespace"]}})
    assert not passed


def test_unicode_width_folds_full_width_digits_and_letters() -> None:
    reply = "退款金额：１，２３４．５０元，单号ＩＮＶ－１０２。"
    assert found(reply, "INV-102", "unicode") and found(reply, "1,234.50", "unicode")
    assert found(reply, "1234.5", "unicode", "numbers")
    assert not found(reply, "1234.5", "numbers")  # full-width digits are not numbers without unicode
    assert not found(reply, "INV-102")


def test_case_sensitivity_still_applies() -> None:
    assert not found("inv-102 approved", "INV-102", "unicode", "whitespace", case_sensitive=True)
    assert found("INV-102 approved", "INV-102", "unicode", "whitespace", case_sensitive=True)


def test_the_reason_names_the_normalisation() -> None:
    passed, reason = grade(["Refund: 1,234.50"], {"reply_not_contains": {"text": "1234.5", "normalize": "numbers"}})
    assert not passed and reason == "reply contains '1234.5' (normalised: numbers)"


HOSTILE = {"commas": "1," * 50_000 + "x", "digits": "9" * 100_000 + ".", "groups": "1,234" * 20_000 + "5",
           "blanks": " \t" * 50_000}
"""100 KB replies built to make a backtracking number or whitespace pattern quadratic (minutes here; linear
takes milliseconds). The time is measured by bench/bench_reply_normalisation.py, which prints the ratio
per doubling; here, what the matching decides on them."""


@pytest.mark.parametrize("reply", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_replies_are_matched_to_their_end(reply: str) -> None:
    steps = ("numbers", "whitespace", "unicode")
    assert not found(reply, "1,234.5 x", *steps)
    assert found(reply + " 1234.50  x", "1,234.5 x", *steps)  # the needle after 100 KB of the pattern's worst case
    assert found(reply + " 1,234.5 x", "1234.50 x", *steps)
