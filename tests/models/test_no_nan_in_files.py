"""JSON has no NaN and no Infinity. pydantic writes them as ``null`` by default, which loses that the number was
undefined; passhat's file and record models write them as the word instead, so that the writers refuse them,
naming the field, and a NaN that reaches a file fails a test rather than writing ``null`` or a broken file."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from passhat.models import Comparison, GateResult, Manifest, Summary
from passhat.models.finite import STRICT_FLOATS, NonFiniteNumberError, dumps_strict
from passhat.models.shadow import ShadowReport
from passhat.runner.records import TrialRecord
from passhat.upstream.log import UpstreamLog
from tests.models.builders import summary_of

WRITTEN = (TrialRecord, Comparison, GateResult, Manifest, Summary, ShadowReport)
EXEMPT = {UpstreamLog}  # its one float is a clock reading (start_ms), never undefined; upstream/ is its own area


def models_in(root: type[BaseModel]) -> Iterator[type[BaseModel]]:
    seen: set[type] = set()

    def walk(tp: Any) -> Iterator[type[BaseModel]]:
        if inspect.isclass(tp) and issubclass(tp, BaseModel):
            if tp not in seen:
                seen.add(tp)
                yield tp
                for field in tp.model_fields.values():
                    yield from walk(field.annotation)
            return
        for arg in typing.get_args(tp):
            yield from walk(arg)

    return walk(root)


def test_every_model_of_a_written_file_writes_nan_as_the_word_for_its_writer_to_refuse() -> None:
    models = {m for root in WRITTEN for m in models_in(root)}
    assert len(models) > 40  # the walk reached the nested models
    loose = sorted(m.__qualname__ for m in models - EXEMPT if m.model_config.get("ser_json_inf_nan") != STRICT_FLOATS)
    assert not loose, f"add ser_json_inf_nan=STRICT_FLOATS to these models' config: {loose}"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_file_holding_nan_is_refused_naming_the_field(number: float) -> None:
    summary = summary_of([(4, 3, 0), (4, 4, 0)], 2)
    bad = summary.model_copy(update={"suite": summary.suite.model_copy(update={"confidence": number})})
    with pytest.raises(NonFiniteNumberError, match=r"passhat\.summary/\d+: suite\.confidence is not a finite number"):
        bad.to_json()


def test_the_words_in_a_text_are_written() -> None:
    summary = summary_of([(4, 3, 0), (4, 4, 0)], 2)
    worded = summary.model_copy(update={"suite": summary.suite.model_copy(update={"name": "NaN Infinity"})})
    assert json.loads(worded.to_json())["suite"]["name"] == "NaN Infinity"


def test_dumps_strict_names_the_field_and_what_was_written() -> None:
    with pytest.raises(NonFiniteNumberError, match=r"report\.json: rows\[1\]\.kappa is not a finite number"):
        dumps_strict({"rows": [{"kappa": 0.5}, {"kappa": float("nan")}]}, "report.json")
    assert dumps_strict({"reply": "NaN"}, "x") == '{"reply": "NaN"}'

