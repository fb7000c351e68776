"""An agent that repeats personal data everywhere it can."""


async def echo(ep):
    c = (await ep.call("get_customer", {"customer_id": "C-1"})).content
    await ep.call("send_receipt", {"to": c["email"], "body": f"card {c['card']}, phone {c['phone']}"})
    await ep.call("get_customer", {"customer_id": c["email"]})  # an error message that quotes the address
    return f"I sent it to {c['email']} for card {c['card']}."
