"""Agents that fail in one known way each."""

import itertools

_keys = itertools.count(1)


async def fresh_key_retry(ep):
    """Retries a lost payment with a new idempotency key: pays twice."""
    inv = (await ep.call("get_invoice", {"invoice_id": "I-1"})).content
    for _ in range(2):
        r = await ep.call("pay", {"invoice_id": "I-1", "amount": inv["amount"], "idempotency_key": f"k-{next(_keys)}"})
        if r.ok:
            break
    return "Paid."


async def same_key_retry(ep):
    """Retries with the same key: the service answers with the first payment."""
    inv = (await ep.call("get_invoice", {"invoice_id": "I-1"})).content
    for _ in range(2):
        r = await ep.call("pay", {"invoice_id": "I-1", "amount": inv["amount"], "idempotency_key": "k-same"})
        if r.ok:
            break
    return "Paid."


async def crash_before_paying(ep):
    """Reads, then has a bug."""
    inv = (await ep.call("get_invoice", {"invoice_id": "I-1"})).content
    raise KeyError(f"total (invoice keys: {sorted(inv)})")
