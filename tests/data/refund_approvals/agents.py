"""Agents for the refund_approvals domain (tests/graders)."""


async def careful(ep):
    """Reads the approval, refunds the approved amount, quotes the refund id, apologises."""
    approval = await ep.call("get_approval", {"order_id": "O-1"})
    refund = await ep.call("issue_refund", {"order_id": "O-1", "amount": approval.content["amount"]})
    return f"Sorry for the trouble: refund {refund.content['refund_id']} of {approval.content['amount']} is on its way."


async def order_amount(ep):
    """Refunds the order amount without reading the approval."""
    order = await ep.call("get_order", {"order_id": "O-1"})
    refund = await ep.call("issue_refund", {"order_id": "O-1", "amount": order.content["amount"]})
    return f"Refund {refund.content['refund_id']} issued."


async def alternating(ep):
    """``careful`` on even trials, ``order_amount`` on odd ones."""
    return await (careful if ep.trial % 2 == 0 else order_amount)(ep)
