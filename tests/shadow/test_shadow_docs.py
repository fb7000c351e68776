"""docs/shadow.md's copy of the JSONL format's JSON Schema is the model's, and its example line is valid."""

from __future__ import annotations

import json
import re
from pathlib import Path

from passhat.redaction import Redactor
from passhat.shadow.traces import Conversation, parse_conversation

DOC = Path(__file__).parents[2] / "docs" / "shadow.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)\n```", DOC.read_text("utf-8"), flags=re.S)


def test_the_documented_schema_is_the_models() -> None:
    assert json.loads(blocks("json")[-1]) == Conversation.model_json_schema(), "update the schema in docs/shadow.md"


def test_the_documented_example_is_a_valid_conversation() -> None:
    rec = parse_conversation(json.loads(blocks("json")[0]), "docs/shadow.md", Redactor())
    assert rec.conversation.id == "conv-7781" and rec.conversation.reply == "Done: 118.50 USD refunded (R-5521)."
    assert [t.failure for _, t in rec.conversation.tool_turns()] == [None, "lost_response", None]
