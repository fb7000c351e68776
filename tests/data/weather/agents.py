"""Agents for the weather domain: plan in the city named in the instruction."""


async def planner(ep):
    city = "Lyon" if "Lyon" in ep.instruction else "Paris"
    forecast = await ep.call("get_forecast", {"city": city, "day": "2026-06-01"})
    if not forecast.ok:
        return f"could not get the forecast: {forecast.error}"
    note = f"picnic ({forecast.content['temp_c']} C, rain: {forecast.content['rain']})"
    plan = await ep.call("save_plan", {"city": city, "day": "2026-06-01", "note": note})
    sms = await ep.call("send_sms", {"to": "ann", "text": f"Picnic in {city}: {note}"})
    return f"Planned {plan.content['id']} and texted ann ({sms.content['id'] if sms.ok else sms.error})."
