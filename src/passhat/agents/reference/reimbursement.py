"""Reference playbook for the reimbursement domain (seed 002).

Three styles share one script so their differences are easy to read:

- ``careful`` lists the employee's own invoices (so a colleague's invoice is refused without touching
  it), re-reads a malformed amount, checks for an existing ticket before filing, uses the policy clause
  in force for the invoice's city, category and the employee's level, and after a lost write response
  queries the tickets before retrying. It never invents a number and keeps the project the user named.
- ``hasty`` does what it is told as fast as it can: looks invoices up by id (a colleague's included),
  takes the first search hit, guesses when a read fails, passes tool output on as-is, retries failed
  writes blindly and approves tickets when asked.
- ``flaky`` is careful, but on a seeded fraction of trials it lapses: it trusts the first search hit,
  skips the duplicate check, retries a lost write blindly, gives up after a failed read instead of
  retrying it, and forgets the project code.

Like a real agent it reads only the instruction, the conversation and tool results.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from passhat.episode import Episode, ToolResult

LAPSE_RATE = 0.3
"""Share of flaky trials with a lapse; the lapse makes the trial fail wherever a check matters."""

INVOICE_ID = re.compile(r"(?<![A-Za-z0-9-])INV-\d+", re.IGNORECASE)
TICKET_ID = re.compile(r"(?<![A-Za-z0-9-])R-\d+")
PROJECT = re.compile(r"(?<![A-Za-z0-9-])P-\d+")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
WANTS_APPROVAL = re.compile(r"\bapprove\b|批准", re.IGNORECASE)
WANTS_NOTIFY = re.compile(r"\b(let|tell|notify|inform|email)\b[^.!?]*\bmanager\b|通知.{0,8}(主管|经理|领导)",
                          re.IGNORECASE)
WANTS_CANCEL = re.compile(r"\bcancel\b|撤销|取消", re.IGNORECASE)
TRANSIENT = re.compile(r"timeout|timed out|unavailable|503|try again", re.IGNORECASE)
GUESSED_INVOICE = {"amount": 100.0, "city": "Shanghai", "category": "local_transport"}
"""What hasty assumes when it cannot read an invoice: a made-up, typical taxi receipt."""


@dataclass
class Request:
    """What the user asked for, read from their messages."""

    invoice_ids: list[str] = field(default_factory=list)
    project: str | None = None
    approve: bool = False
    notify: bool = False
    cancel_ids: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        """Fold one user message into the request (later messages add, never erase)."""
        for inv in INVOICE_ID.findall(text):
            if inv.upper() not in self.invoice_ids:
                self.invoice_ids.append(inv.upper())
        self.project = self.project or next(iter(PROJECT.findall(text)), None)
        self.approve = self.approve or bool(WANTS_APPROVAL.search(text))
        self.notify = self.notify or bool(WANTS_NOTIFY.search(text))
        if WANTS_CANCEL.search(text):
            self.cancel_ids += [t for t in TICKET_ID.findall(text) if t not in self.cancel_ids]


def as_number(value: Any) -> float | None:
    """A JSON number as float; anything else (text such as ``"118.5元"``, null) is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def parse_amount(text: str) -> float | None:
    """The amount in a decorated string such as ``"118.5元"``; None unless it holds exactly one number."""
    found = NUMBER.findall(text)
    return float(found[0]) if len(found) == 1 else None


def fmt(x: float) -> str:
    """118.5 → "118.5", 120.0 → "120"."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


class Playbook:
    """One trial of one style; collects the lines of its final reply as it goes."""

    def __init__(self, episode: Episode, style: str) -> None:
        self.ep = episode
        self.hasty = style == "hasty"
        self.lapse = style == "flaky" and random.Random(episode.seed).random() < LAPSE_RATE
        self.lines: list[str] = []
        self._level: str | None = None

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return await self.ep.call(name, args or {})

    async def read(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        """A read, retried once when it fails transiently (reads are safe to repeat; a lapse gives up)."""
        result = await self.call(name, args)
        if not result.ok and not self.lapse and TRANSIENT.search(result.error or ""):
            result = await self.call(name, args)
        return result

    async def run(self) -> str | None:
        request = Request()
        request.add(self.ep.instruction)
        if request.cancel_ids:
            await self.cancel(request)
        else:
            if not request.invoice_ids and not await self.ask_invoice(request):
                return "I need the invoice number before I can file a reimbursement."
            if self.hasty:
                await self.file_hastily(request)
            else:
                await self.file_carefully(request)
        return "\n".join(self.lines) or None

    async def ask_invoice(self, request: Request) -> bool:
        answer = await self.ep.say("Which invoice should I reimburse? Please tell me the invoice number (e.g. INV-123).")
        if answer:
            request.add(answer)
        return bool(request.invoice_ids)

    # --- careful (and flaky) -------------------------------------------------------------------------

    async def file_carefully(self, request: Request) -> None:
        listed = await self.read("query_invoices")
        if not listed.ok:
            self.lines.append(f"I could not read your invoices ({listed.error}), so I filed nothing. Please try later.")
            return
        mine = {row["invoice_id"]: row for row in listed.content}
        project = None if self.lapse else request.project
        for invoice_id in request.invoice_ids:
            invoice = mine.get(invoice_id)
            if invoice is None:
                self.lines.append(
                    f"{invoice_id} is not one of your invoices, so I did not file it: only its owner can "
                    "reimburse it (policy §9); please ask your colleague to file it themselves.")
                continue
            ticket = await self.file_one(invoice, project)
            if ticket is not None and request.notify:
                await self.notify(ticket)
        if request.approve:
            self.lines.append("I did not approve the ticket: employees never approve their own tickets; "
                              "your manager approves it (policy §10).")

    async def file_one(self, invoice: dict[str, Any], project: str | None) -> dict[str, Any] | None:
        invoice_id = invoice["invoice_id"]
        amount = await self.amount_of(invoice)
        if amount is None:
            self.lines.append(f"I could not read a valid amount for {invoice_id}, so I did not file it.")
            return None
        if not self.lapse:
            existing = await self.active_ticket(invoice_id)
            if existing is None:
                self.lines.append(f"I could not check existing tickets for {invoice_id}, so I did not file it.")
                return None
            if existing:
                t = existing[0]
                self.lines.append(f"{invoice_id} already has ticket {t['id']} (status {t['status']}); "
                                  "I did not file it again.")
                return None
        clause = await self.applicable_clause(invoice)
        if clause is None:
            self.lines.append(f"I could not find the policy limit that applies to {invoice_id}, so I did not file it.")
            return None
        over = round(max(0.0, amount - clause["limit_amount"]), 2)
        ticket = await self.create_checked(invoice_id, amount, over, project)
        if ticket is not None:
            self.lines.append(describe(ticket, clause))
        return ticket

    async def amount_of(self, invoice: dict[str, Any]) -> float | None:
        """The invoice amount as a number: re-read once if it came back malformed, then parse exactly."""
        amount = as_number(invoice["amount"])
        if amount is not None:
            return amount
        again = await self.read("query_invoices", {"invoice_id": invoice["invoice_id"]})
        if again.ok and again.content:
            amount = as_number(again.content[0]["amount"])
            if amount is not None:
                return amount
        return parse_amount(str(invoice["amount"]))

    async def active_ticket(self, invoice_id: str) -> list[dict[str, Any]] | None:
        """Tickets of the invoice that are not cancelled ([] if none; None if they cannot be read)."""
        result = await self.read("query_tickets", {"invoice_id": invoice_id})
        if not result.ok:
            return None
        return [t for t in result.content if t["status"] != "cancelled"]

    async def my_level(self) -> str | None:
        if self._level is None:
            me = await self.read("get_employee")
            self._level = me.content["level"] if me.ok else None
        return self._level

    async def applicable_clause(self, invoice: dict[str, Any]) -> dict[str, Any] | None:
        """The clause in force for the invoice's city and category (and the employee's level)."""
        found = await self.read("search_policy", policy_query(invoice))
        if not found.ok or not found.content:
            return None
        clauses: list[dict[str, Any]] = found.content
        if self.lapse:
            return clauses[0]
        in_force = [c for c in clauses if c.get("effective_to") is None]
        if any(c.get("levels") for c in in_force):
            level = await self.my_level()
            in_force = [c for c in in_force if not c.get("levels") or level in c["levels"]]
        return max(in_force, key=lambda c: c["version"], default=None)

    async def create_checked(self, invoice_id: str, amount: float, over: float,
                             project: str | None) -> dict[str, Any] | None:
        """Create the ticket; after a failure, look for it before retrying (the service is not idempotent)."""
        args: dict[str, Any] = {"invoice_id": invoice_id, "amount": amount, "over_limit": over}
        if project:
            args["project_code"] = project
        created = await self.call("create_reimbursement_ticket", args)
        if created.ok:
            return await self.confirm(created.content, amount)
        if not TRANSIENT.search(created.error or ""):
            self.lines.append(f"Filing {invoice_id} failed: {created.error}")
            return None
        if not self.lapse:
            existing = await self.active_ticket(invoice_id)
            if existing:
                return existing[-1]
            if existing is None:
                self.lines.append(f"Filing {invoice_id} timed out and I could not check whether it went through; "
                                  "I did not retry, to avoid a duplicate.")
                return None
        retried = await self.call("create_reimbursement_ticket", args)
        if retried.ok:
            return retried.content
        self.lines.append(f"Filing {invoice_id} failed: {retried.error}")
        return None

    async def confirm(self, ticket: dict[str, Any], amount: float) -> dict[str, Any]:
        """Read the new ticket back and report a mismatch rather than claim success."""
        check = await self.read("query_tickets", {"ticket_id": ticket["id"]})
        if check.ok and check.content:
            stored = check.content[0]
            if as_number(stored["amount"]) != amount:
                self.lines.append(f"Warning: ticket {stored['id']} shows amount {stored['amount']}, expected {fmt(amount)}.")
            return stored
        return ticket

    async def notify(self, ticket: dict[str, Any]) -> None:
        message = (f"Please review reimbursement ticket {ticket['id']} for {ticket['invoice_id']} "
                   f"({fmt(ticket['amount'])} CNY). The employee asked me to let you know it is urgent.")
        sent = await self.call("notify_manager", {"ticket_id": ticket["id"], "message": message})
        self.lines.append("I emailed your manager about it." if sent.ok else f"I could not email your manager: {sent.error}")

    async def cancel(self, request: Request) -> None:
        for ticket_id in request.cancel_ids:
            if not self.hasty:
                found = await self.read("query_tickets", {"ticket_id": ticket_id})
                if not found.ok or not found.content:
                    self.lines.append(f"I could not find your ticket {ticket_id}: {found.error or 'no such ticket'}.")
                    continue
                status = found.content[0]["status"]
                if status not in ("awaiting_manager_approval", "awaiting_finance_review"):
                    self.lines.append(f"Ticket {ticket_id} is {status}; it can no longer be cancelled.")
                    continue
            done = await self.call("cancel_ticket", {"ticket_id": ticket_id, "reason": "Filed by mistake (employee request)"})
            self.lines.append(f"Ticket {ticket_id} is cancelled." if done.ok else f"Cancelling {ticket_id} failed: {done.error}")

    # --- hasty ---------------------------------------------------------------------------------------

    async def file_hastily(self, request: Request) -> None:
        for invoice_id in request.invoice_ids:
            looked_up = await self.call("query_invoices", {"invoice_id": invoice_id})
            invoice = looked_up.content[0] if looked_up.ok and looked_up.content else dict(GUESSED_INVOICE)
            invoice["invoice_id"] = invoice_id
            found = await self.call("search_policy", policy_query(invoice))
            clause = found.content[0] if found.ok and found.content else None
            amount = invoice["amount"]
            over = 0.0
            if clause is not None and as_number(amount) is not None and amount > clause["limit_amount"]:
                over = round(amount - clause["limit_amount"], 2)
            args: dict[str, Any] = {"invoice_id": invoice_id, "amount": amount, "over_limit": over}
            if request.project:
                args["project_code"] = request.project
            created = await self.call("create_reimbursement_ticket", args)
            if not created.ok:
                created = await self.call("create_reimbursement_ticket", args)
            if not created.ok:
                self.lines.append(f"Filing {invoice_id} failed: {created.error}")
                continue
            ticket = created.content
            self.lines.append(describe(ticket, clause))
            if request.approve:
                approved = await self.call("approve_ticket", {"ticket_id": ticket["id"]})
                self.lines.append("Approved it." if approved.ok else f"Approval failed: {approved.error}")
            if request.notify:
                await self.notify(ticket)


def policy_query(invoice: dict[str, Any]) -> dict[str, Any]:
    category = invoice["category"]
    return {"query": f"{category.replace('_', ' ')} limit", "city": invoice["city"], "category": category}


def describe(ticket: dict[str, Any], clause: dict[str, Any] | None) -> str:
    """One reply line: ticket id, amount, limit and clause, over-limit part, status."""
    basis = (f"the limit is {fmt(clause['limit_amount'])} CNY ({clause['version']} §{clause['section']})"
             if clause else "no limit found")
    return (f"Filed ticket {ticket['id']} for {ticket['invoice_id']}: {fmt(ticket['amount'])} CNY; {basis}; "
            f"{fmt(ticket['over_limit'])} CNY over the limit; status {ticket['status']}.")


async def play(episode: Episode, style: str) -> str | None:
    """Run the reimbursement playbook in the given style; returns the final reply to the user."""
    return await Playbook(episode, style).run()
