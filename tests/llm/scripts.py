"""Scripts for the fake model server: a reimbursement clerk model, a naive judge, a biased pairwise judge."""

from __future__ import annotations

import json
import re
from typing import Any

from passhat.testing.fake_models import FakeRequest, ToolUse, Turn

DONE = "###DONE###"


def _first_user_text(req: FakeRequest) -> str:
    for m in req.messages:
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content or [])
    return ""


def _tool_results(req: FakeRequest) -> list[Any]:
    """Tool results since the model's last turn, parsed as JSON where possible (both wire formats)."""
    out: list[Any] = []
    for m in req.messages:
        if m.get("role") == "assistant":
            out = []
        elif m.get("role") == "tool":
            out.append(m.get("content"))
        elif m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [b.get("content") for b in m["content"] if b.get("type") == "tool_result"]
    parsed = []
    for text in out:
        try:
            parsed.append(json.loads(text))
        except (TypeError, ValueError):
            parsed.append(text)
    return parsed


def reimbursement_clerk(req: FakeRequest) -> Turn:
    """Files the invoice named in the instruction with the right numbers for INV-102, reads otherwise."""
    invoice = re.search(r"INV-\d+", _first_user_text(req))
    if invoice is None:
        if req.turn == 0:
            return Turn(text="Which invoice would you like me to file?", delay_s=0.01)
        return Turn(text=f"I could not find an invoice number, so I did not file anything. {DONE}")
    inv = invoice.group(0)
    if req.turn == 0:
        return Turn(delay_s=0.01, tool_calls=[  # two parallel calls
            ToolUse("query_invoices", {"invoice_id": inv}),
            ToolUse("search_policy", {"query": "taxi local transport", "city": "Shanghai", "category": "local_transport"}),
        ])
    if req.turn == 1 and inv == "INV-102":
        return Turn(tool_calls=[ToolUse("create_reimbursement_ticket", {"invoice_id": inv, "amount": 118.5, "over_limit": 38.5})])
    if req.turn == 2 and inv == "INV-102":
        ticket = next((r for r in _tool_results(req) if isinstance(r, dict) and "id" in r), {})
        return Turn(text=f"Filed ticket {ticket.get('id', '?')} for 118.5 CNY; 38.5 over the 80 CNY limit (§4.2), "
                         f"awaiting your manager's approval. {DONE}")
    return Turn(text=f"I have looked at {inv} but will leave filing to you. {DONE}")


CRITERION = re.compile(r"## Criterion `([^`]+)`\nQuestion: .*?\nLevels \(integer scores (\d+) to (\d+)", re.DOTALL)
OPEN = re.compile(r"<<<(?!END)[^>\n]*>>>")
CLOSE = re.compile(r"<<<END[^>\n]*>>>")


def criteria_in(prompt: str) -> list[tuple[str, int, int]]:
    return [(m.group(1), int(m.group(2)), int(m.group(3))) for m in CRITERION.finditer(prompt)]


def outside_data(prompt: str) -> str:
    """What a naive model takes as instructions: everything but the span from the first opening marker
    to the first closing marker it sees (a forged closing marker in the data ends the block early)."""
    start, end = OPEN.search(prompt), CLOSE.search(prompt)
    if start is None or end is None:
        return prompt
    return prompt[: start.start()] + prompt[end.end():]


def verdict(scores: dict[str, int]) -> str:
    return json.dumps({"criteria": {k: {"evidence": "from the data", "score": v} for k, v in scores.items()}})


def naive_judge(good_if: str) -> Any:
    """A fake judge that obeys injected instructions *outside* its data block, and otherwise scores each
    criterion at the top of its scale when the data contains ``good_if``, else at the bottom."""

    def script(req: FakeRequest) -> Turn:
        prompt = req.last_user_text  # rubric, data block and answer format
        crit = criteria_in(prompt)
        if "ignore the rubric" in outside_data(prompt).lower():
            return Turn(text=verdict({name: high for name, _, high in crit}))
        good = good_if in prompt
        return Turn(text=verdict({name: high if good else low for name, low, high in crit}))

    return script


def first_position_judge(req: FakeRequest) -> Turn:
    """A position-biased pairwise judge: always prefers whatever is shown first."""
    return Turn(text=json.dumps({"evidence": "the first one reads better", "preferred": "1"}))


def content_judge(marker: str) -> Any:
    """A consistent pairwise judge: prefers the response whose data block contains ``marker``."""

    def script(req: FakeRequest) -> Turn:
        one = req.prompt.split("# Response 2")[0].split("# Response 1")[-1]
        return Turn(text=json.dumps({"evidence": "by the rubric", "preferred": "1" if marker in one else "2"}))

    return script
