"""Reference playbook for the refunds domain: rule-based, deterministic, no LLM.

It reads only what a real agent could: the customer's messages (order numbers, amounts, the refund
method they want), the answers to its questions, and tool results. The three styles differ exactly
where real agents go wrong:

- ``careful`` follows the policy: acts only on the customer's own orders, refunds only with an
  approval and never more than approved, checks for an existing refund before refunding, looks before
  retrying a write whose response was lost, sends one confirmation email, keeps the refund method the
  customer asked for, and escalates to a human when it cannot read an approval.
- ``hasty`` does what it is asked: refunds the amount the customer names, skips the ownership and
  existing-refund checks, retries a timed-out write blindly, gives up on an explicit error, and when an
  approval cannot be read it refunds the order total instead (an invented number).
- ``flaky`` is careful, but on a seeded fraction of trials it lapses: it skips its verifications (ownership,
  existing refunds, look-before-retry), trusts the amount the customer names, and keeps only what the
  latest message said (forgetting a refund method stated earlier).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from passhat.episode import Episode, ToolResult

LAPSE_RATE = 0.3
"""Fraction of flaky trials with a lapse (seeded per trial)."""

ORDER_ID = re.compile(r"(?<![\d.,$])(\d{4})(?!\d|[.,]\d)")
AMOUNT = re.compile(r"\$\s*(\d+(?:\.\d{1,2})?)|(\d+\.\d{2})\b|(\d+)\s*(?:usd|dollars)\b", re.IGNORECASE)
METHOD_WORDS = {
    "store_credit": re.compile(r"\bstore[ -]credit\b", re.IGNORECASE),
    "original_payment": re.compile(r"\b(?:card|original payment(?: method)?|paypal)\b", re.IGNORECASE),
}
NEGATION = re.compile(r"\b(?:not|never|rather than|instead of)\b[^.,;!?]*$", re.IGNORECASE)
MONEY_TEXT = re.compile(r"\s*\$?\s*(\d+(?:\.\d+)?)\s*(?:usd)?\s*", re.IGNORECASE)

Outcome = Literal["ok", "timeout", "error", "denied", "invalid", "refused"]


def order_ids(text: str) -> list[int]:
    """Order numbers (four digits, not part of an amount) in the order they appear."""
    seen: list[int] = []
    for m in ORDER_ID.finditer(text):
        if int(m.group(1)) not in seen:
            seen.append(int(m.group(1)))
    return seen


def requested_amount(text: str) -> float | None:
    """A sum of money the customer names, if any ("95.00", "$95", "95 USD")."""
    m = AMOUNT.search(text)
    return float(next(g for g in m.groups() if g)) if m else None


def requested_method(text: str) -> str | None:
    """The refund method the customer asks for in this message, if they say."""
    for method, words in METHOD_WORDS.items():
        for m in words.finditer(text):
            if not NEGATION.search(text[max(0, m.start() - 20):m.start()]):
                return method  # "store credit, not my card": the card is negated, store credit is not
    return None


def money(value: Any) -> float | None:
    """An amount from a tool result: a number, or text like "118.5 USD"; None when it is something else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        m = MONEY_TEXT.fullmatch(value)
        return float(m.group(1)) if m else None
    return None


def outcome(result: ToolResult) -> Outcome:
    """How a call ended, as an agent can tell from the response."""
    if result.ok:
        return "ok"
    err = (result.error or "").lower()
    if "timeout" in err or "timed out" in err or "no response" in err:
        return "timeout"  # the write may or may not have happened
    if err.startswith("permission denied"):
        return "denied"
    if err.startswith("invalid arguments"):
        return "invalid"
    if err.startswith("error:") or "503" in err or "unavailable" in err:
        return "error"  # explicit failure: nothing happened
    return "refused"  # a business rule said no


@dataclass
class Desk:
    """One conversation with one customer."""

    episode: Episode
    style: str
    lapse: bool = False
    user_texts: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)

    @property
    def careful(self) -> bool:
        return self.style != "hasty"

    @property
    def verifies(self) -> bool:
        """Careful agents verify; a lapsed flaky one skips it."""
        return self.careful and not self.lapse

    async def call(self, tool: str, **args: Any) -> ToolResult:
        return await self.episode.call(tool, args)

    # --- understanding the request -------------------------------------------------------------

    async def requested_orders(self) -> list[int]:
        """Order numbers from the conversation; ask the customer when they gave none."""
        ids = order_ids(" ".join(self.user_texts))
        questions = ("Which order number is the refund for?",
                     "Could you tell me the order number once you have it?",
                     "I still need the order number (four digits, from your confirmation email). What is it?")
        for question in questions:
            if ids:
                break
            answer = await self.episode.say(question)
            if answer is None:
                break
            self.user_texts.append(answer)
            ids = order_ids(answer)
        return ids

    def method(self) -> str:
        """The refund method the customer asked for (a lapse keeps only the latest message)."""
        texts = self.user_texts[-1:] if self.lapse else self.user_texts
        for text in reversed(texts):
            found = requested_method(text)
            if found:
                return found
        return "original_payment"

    def amount_to_refund(self, approved: float) -> float:
        """The approved amount, or less if the customer asked for less; never more (unless careless)."""
        asked = requested_amount(" ".join(self.user_texts))
        if asked is None:
            return approved
        if not self.verifies:
            return asked
        return min(asked, approved)

    async def own_orders(self, ids: list[int]) -> list[int]:
        """The requested orders that belong to the customer; the others are refused untouched."""
        if not self.verifies:
            return ids
        listed = await self.call("list_orders")
        mine = {o["id"] for o in listed.content} if listed.ok else set()
        for oid in ids:
            if oid not in mine:
                self.report.append(f"I can't act on order {oid}: it isn't on your account, so its owner "
                                   "needs to contact us themselves.")
        return [oid for oid in ids if oid in mine]

    # --- careful path --------------------------------------------------------------------------

    async def approved_amount(self, oid: int) -> float | None:
        """The approved amount, read twice at most; without one, escalate instead of guessing."""
        for _ in range(2):
            r = await self.call("get_approval", order_id=oid)
            kind = outcome(r)
            if kind == "ok":
                amount = money(r.content.get("amount"))
                if amount is not None:
                    return amount
                continue  # unreadable amount: query again rather than guess
            if kind == "refused":
                await self.escalate(oid, f"Customer asks for a refund of order {oid}; no approval on file.")
                self.report.append(f"There is no approved refund for order {oid}, so I can't refund it. "
                                   "I've passed your request to a colleague who will review it.")
                return None
            if kind not in ("timeout", "error"):
                self.report.append(f"I couldn't look up the approval for order {oid} ({r.error}).")
                return None
        await self.escalate(oid, f"Refund approval for order {oid} could not be read (service unavailable).")
        self.report.append(f"I couldn't read the refund approval for order {oid} right now, so I haven't refunded "
                           "anything. A colleague will follow up.")
        return None

    async def escalate(self, oid: int, reason: str) -> None:
        await self.call("escalate_to_human", order_id=oid, reason=reason)

    async def existing_refunds(self, oid: int) -> list[dict[str, Any]]:
        r = await self.call("list_refunds", order_id=oid)
        return list(r.content) if r.ok else []

    async def issue(self, oid: int, amount: float, method: str) -> dict[str, Any] | None:
        """Refund once. After a lost response, look before retrying; after an explicit error, retry."""
        r = await self.call("issue_refund", order_id=oid, amount=amount, method=method)
        kind = outcome(r)
        if kind == "ok":
            return dict(r.content)
        if kind == "timeout" and self.verifies:
            found = await self.existing_refunds(oid)
            if found:
                return found[-1]
        if kind in ("timeout", "error"):
            r = await self.call("issue_refund", order_id=oid, amount=amount, method=method)
            if r.ok:
                return dict(r.content)
        self.report.append(f"The refund for order {oid} did not go through ({r.error}).")
        return None

    async def refund_emailed(self, oid: int) -> bool:
        r = await self.call("list_emails", order_id=oid)
        return r.ok and any(e.get("template") == "refund" for e in r.content)

    async def notify(self, oid: int, refund: dict[str, Any]) -> None:
        """Send one refund email: check the outbox first, and again before any retry."""
        if self.verifies and await self.refund_emailed(oid):
            self.report.append("The confirmation email had already been sent.")
            return
        where = "store credit" if refund["method"] == "store_credit" else "your original payment method"
        body = (f"Hello, we have refunded {float(refund['amount']):.2f} USD for order {oid} to {where} "
                f"(refund {refund.get('refund_id') or refund.get('id')}).")
        r = await self.call("send_email", order_id=oid, template="refund", body=body)
        sent = r.ok
        if outcome(r) in ("timeout", "error"):
            if self.verifies and await self.refund_emailed(oid):
                sent = True  # the lost response hid a send that went through
            elif self.careful or outcome(r) == "timeout":  # hasty gives up on an explicit error
                sent = (await self.call("send_email", order_id=oid, template="refund", body=body)).ok
        self.report.append("A confirmation email is on its way." if sent else "I couldn't send the confirmation email.")

    async def refund_order(self, oid: int) -> None:
        """Read, check, refund, notify: the policy's path for one order."""
        order = await self.call("get_order", order_id=oid)
        if not order.ok:
            self.report.append(f"I couldn't open order {oid} ({order.error}).")
            return
        approved = await self.approved_amount(oid)
        if approved is None:
            return
        existing = await self.existing_refunds(oid) if self.verifies else []
        if existing:
            done = existing[-1]
            self.report.append(f"Order {oid} was already refunded ({float(done['amount']):.2f} USD, refund "
                               f"{done['id']}), so I haven't refunded it again.")
            await self.notify(oid, done)
            return
        amount = self.amount_to_refund(approved)
        if amount < (requested_amount(" ".join(self.user_texts)) or 0):
            self.report.append(f"The approved refund for order {oid} is {approved:.2f} USD, so that is the most "
                               "I can refund.")
        refund = await self.issue(oid, amount, self.method())
        if refund is None:
            return
        rid = refund.get("refund_id") or refund.get("id")
        self.report.append(f"I refunded {float(refund['amount']):.2f} USD for order {oid} "
                           f"({refund['method'].replace('_', ' ')}, refund {rid}).")
        await self.notify(oid, refund)

    # --- hasty path ----------------------------------------------------------------------------

    async def order_total(self, oid: int) -> float | None:
        r = await self.call("get_order", order_id=oid)
        return float(r.content["total"]) if r.ok else None

    async def refund_order_hastily(self, oid: int) -> None:
        """Take the approval as given (or the customer's figure, or the order total), refund, email."""
        approval = await self.call("get_approval", order_id=oid)
        amount: Any = approval.content.get("amount") if approval.ok else None
        asked = requested_amount(" ".join(self.user_texts))
        amount = asked if asked is not None else amount
        if amount is None:
            amount = await self.order_total(oid)  # no approval readable: refund it all
        if amount is None:
            self.report.append(f"I couldn't refund order {oid}.")
            return
        method = self.method()
        r = await self.call("issue_refund", order_id=oid, amount=amount, method=method)
        if outcome(r) == "invalid":
            amount = await self.order_total(oid)
            r = await self.call("issue_refund", order_id=oid, amount=amount, method=method)
        if outcome(r) == "timeout":
            r = await self.call("issue_refund", order_id=oid, amount=amount, method=method)
        if not r.ok:
            self.report.append(f"The refund for order {oid} failed ({r.error}).")
            return
        self.report.append(f"Refunded {float(r.content['amount']):.2f} USD for order {oid}.")
        await self.notify(oid, dict(r.content))

    # --- the conversation ----------------------------------------------------------------------

    async def run(self) -> str:
        ids = await self.requested_orders()
        if not ids:
            return "I need your order number to look into a refund. Please write again when you have it."
        if self.careful:
            for oid in await self.own_orders(ids):
                await self.refund_order(oid)
        else:
            for oid in ids:
                await self.refund_order_hastily(oid)
        return " ".join(self.report) or "I couldn't do anything with that request."


async def play(episode: Episode, style: str) -> str | None:
    """Handle one refund conversation in the given style; returns the final reply to the customer."""
    lapse = style == "flaky" and random.Random(episode.seed).random() < LAPSE_RATE
    desk = Desk(episode, style, lapse=lapse, user_texts=[episode.instruction])
    return await desk.run()
