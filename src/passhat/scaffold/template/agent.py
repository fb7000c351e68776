"""A starter agent: replace it with yours (a model-driven loop, an HTTP client to your service, ...).

It is rule-based only so the example runs without an API key. Run it with:
    passhat run cases --agent agent.py:agent --trials 4
"""


async def agent(episode):
    text = episode.instruction.lower()
    tickets = (await episode.call("list_tickets")).content or []
    if "vpn" in text:
        existing = next((t for t in tickets if "vpn" in t["title"].lower() and t["status"] == "open"), None)
        if existing:
            return f"There is already an open ticket for this: {existing['id']}."
    result = await episode.call("open_ticket", {"title": "laptop won't boot", "priority": 3})
    if not result.ok:  # the response may be lost after the ticket was created: look before retrying
        again = (await episode.call("list_tickets")).content or []
        created = next((t for t in again if t["title"] == "laptop won't boot"), None)
        if created:
            return f"I opened ticket {created['id']} for your laptop."
        result = await episode.call("open_ticket", {"title": "laptop won't boot", "priority": 3})
    return f"I opened ticket {result.content['ticket_id']} for your laptop (urgent)."
