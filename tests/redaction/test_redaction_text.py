"""Redaction on a record's JSON text (``Redactor.json_text``) gives the bytes of redacting the value and writing it
again: what ``RunStore.encode`` stores does not depend on which of the two it took (docs/design/032)."""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import to_json

from passhat.agents import reference_agent
from passhat.cases import load_suite
from passhat.models.finite import NonFiniteNumberError
from passhat.redaction import Redactor, _replaced
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore, _compact
from passhat.runner.trial import run_trial

TRICKY: list[Any] = [
    {"email": "write to ann@example.com today", "n": 4111111111111111, "card": "4111 1111 1111 1111"},
    {"quoted": 'she said "call +44 20 7946 0958"', "slash": "C:\\temp\\ann@example.com", "end": "ends in \\"},
    {"lines": "first line\nsecond: 555-123-4567\tend", "control": "bell\x07 and nul\x00 with 4111-1111-1111-1111"},
    {"unicode": "Zoë <zoë@example.com> ☎ +1 (555) 123-4567", "emoji": "📞 13800138000"},
    {"digest": "4111111111111111" + "0" * 16, "id": "ORD-4111111111111111", "float": 113.71000000000004},
    {"nested": [{"a": ["x@y.io", 1, None, True, 2.5e-05]}, [], {}], "tuple": ("a@b.cd", "plain")},
    {"only": "no digits, no at sign", "empty": "", "keys": {"plain": 1, "4812": "key with digits only"}},
    # a redacted string that is also the text between two strings (",4111…,"): replaced string by string
    {"a": 1, "b": 4111111111111111, "c": ":4111111111111111,", "d": [",4111111111111111,", 4111111111111111, "x"]},
    # a string whose redaction is another string of the record, redacted again (redaction is not idempotent)
    {"first": "+4410958+44555(555)x123", "then": "[REDACTED:phone]+44555(555)x123"},
    # escapes around and inside what is replaced, the same value many times
    {"m": ['"ann@example.com"\n', '"ann@example.com"\n', "ann@example.com", 'a\\"b@c.de\\'], "k": "x\\"},
]


@pytest.mark.parametrize("value", TRICKY)
def test_text_redaction_is_the_value_redaction_written(value: Any) -> None:
    redactor = Redactor()
    expected = to_json(Redactor().value(value))
    assert redactor.json_text(to_json(value)) == expected
    assert redactor.json_text(to_json(value)) == expected  # again, from the memo


def test_what_the_text_cannot_decide_is_left_to_the_value() -> None:
    # keys redacted alike get "#2" from the walk over the dict: on the text, a changed key says so
    assert Redactor().json_text(to_json({"ann@example.com": 1, "bob@example.com": 2})) is None
    record = to_json({"national_id": "AB123", "note": "x@y.io"})
    assert Redactor.build(extra_fields=["national_id"]).json_text(record) is None  # a field's value goes whole
    assert Redactor.build(extra_patterns={"ticket": r"TCK-\d+"}).json_text(record) is None
    assert Redactor(numbered=True).json_text(record) is None
    assert Redactor(enabled=False).json_text(record) == record
    # what RunStore.encode asks before writing the text at all
    assert Redactor().on_text and Redactor(enabled=False).on_text
    assert not Redactor.build(extra_fields=["national_id"]).on_text and not Redactor(numbered=True).on_text
    assert not Redactor.build(extra_patterns={"ticket": r"TCK-\d+"}).on_text


async def unredacted_records() -> list[TrialRecord]:
    suite = load_suite("refunds")
    return [await run_trial(case, suite.domain_of(case), reference_agent(agent), 0, seed)
            for seed, agent in enumerate(("careful", "hasty")) for case in suite.cases]


def test_stored_records_are_the_bytes_of_the_value_path(tmp_path: Path) -> None:
    # real records (tool results with e-mail addresses and phone numbers, grades, spans), encoded both ways
    records = asyncio.run(unredacted_records())
    assert any("@" in str(record.calls) for record in records)
    for make in (Redactor, lambda: Redactor.build(extra_fields=["email"]), lambda: Redactor(enabled=False)):
        store, reference = RunStore(tmp_path, make()), make()
        for record in records:
            written = to_json(reference.value(record.model_dump(mode="json")), inf_nan_mode="constants") + b"\n"
            assert store.encode(record) == written


def test_a_replacement_that_is_another_string_is_not_replaced_again() -> None:
    # "+4410958+44555(555)x123" redacts to "[REDACTED:phone]+44555(555)x123", which redacts to more: replaced
    # one after the other in the whole text, the second would also take what the first put in
    first, then = b"+4410958+44555(555)x123", b"[REDACTED:phone]+44555(555)x123"
    redactor = Redactor()
    assert redactor.text(then.decode()) != then.decode()  # what makes the case
    raw = to_json({"a": first.decode(), "b": then.decode()})
    changed = {first: then, then: b"[REDACTED:phone][REDACTED:phone]x123"}  # in the order that would go wrong
    assert _replaced(raw, raw.split(b'"'), changed) == to_json(redactor.value(
        {"a": first.decode(), "b": then.decode()}))


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_number_json_cannot_hold_is_refused_naming_the_field_not_written_as_null(
        tmp_path: Path, number: float) -> None:
    # pydantic writes a real NaN in a plain value as the word, which no JSON reader takes: _compact leaves such a
    # value to json.dumps, which refuses it (the check looks for the letter first, then the word); so are the words
    # in a string, which json.dumps writes as they are. The record's models write the word too (STRICT_FLOATS), so a
    # NaN anywhere in a record is refused, naming the field, instead of becoming a null nobody chose.
    assert _compact({"total": number}) is None and _compact({"reply": "NaN Infinity"}) is None
    assert _compact({"total": 1.5, "reply": "Nat Indigo"}) == b'{"total":1.5,"reply":"Nat Indigo"}'
    record = asyncio.run(unredacted_records())[0]
    for redactor in (Redactor(), Redactor(enabled=False)):  # the text path and the value path
        store = RunStore(tmp_path, redactor)
        call = record.calls[0].model_copy(update={"result": {"total": number}})
        with pytest.raises(NonFiniteNumberError, match=r"calls\[0\]\.result\.total is not a finite number"):
            store.encode(record.model_copy(update={"calls": [call, *record.calls[1:]]}))
        timing = record.timing.model_copy(update={"agent_s": number})
        with pytest.raises(NonFiniteNumberError, match=r"timing\.agent_s is not a finite number"):
            store.encode(record.model_copy(update={"timing": timing}))
        worded = record.model_copy(update={"reply": "NaN Infinity -Infinity"})
        assert json.loads(store.encode(worded))["reply"] == "NaN Infinity -Infinity"
