"""An agent program for the notes domain, run by passhat as ``cmd:python notes_agent.py BEHAVIOUR``.

It uses only the standard library and the documented protocol (PASSHAT_* variables, the plain JSON
tool API with a bearer token), as an agent in another language would.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request


def call(name, arguments):
    request = urllib.request.Request(
        f"{os.environ['PASSHAT_TOOLS_URL']}/{name}", data=json.dumps(arguments).encode(), method="POST",
        headers={"authorization": f"Bearer {os.environ['PASSHAT_TOKEN']}", "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def main(behaviour):
    if behaviour == "good":
        note = call("add_note", {"title": "call mom", "priority": 2})
        print("working on it", file=sys.stderr)
        print(f"I added note {note['result']['id']}.")
    elif behaviour == "json_reply":
        call("add_note", {"title": "call mom", "priority": 2})
        print("some chatter first")
        print(json.dumps({"reply": "added the note", "usage": {"model": "gpt-4o-mini", "input_tokens": 1000,
                                                                "output_tokens": 200}}))
    elif behaviour == "traced":
        traced()
    elif behaviour == "hang":
        call("add_note", {"title": "call mom", "priority": 2})
        time.sleep(3600)
    elif behaviour == "spin":
        call("add_note", {"title": "call mom", "priority": 2})
        while True:
            pass
    elif behaviour == "exit":
        call("add_note", {"title": "call mom", "priority": 2})
        print("Traceback (most recent call last):\nRuntimeError: model said no", file=sys.stderr)
        sys.exit(7)
    elif behaviour == "garbage":
        call("add_note", {"title": "call mom", "priority": 2})
        sys.stdout.buffer.write(b"\xff\xfe\x00added\x00")
    elif behaviour == "deep_reply":  # a last line that looks like a reply, nested past any parser's stack
        call("add_note", {"title": "call mom", "priority": 2})
        print('{"reply": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif behaviour == "orphan":
        # a child in a session of its own that would hold stdout open for an hour, named by the marker
        # in its argv (sys.argv[2]) so the test can look for it; passhat must neither wait for it nor let it live
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", sys.argv[2]], start_new_session=True)
        call("add_note", {"title": "call mom", "priority": 2})
        print("added")
    else:
        sys.exit(f"unknown behaviour {behaviour}")



def traced():
    """Reports its model call the way instrumented frameworks do: an OpenTelemetry GenAI span, exported
    with the standard OTEL_EXPORTER_OTLP_TRACES_* variables passhat sets."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("notes-agent")
    with tracer.start_as_current_span("chat gpt-4o-mini") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
        span.set_attribute("gen_ai.usage.input_tokens", 1200)
        span.set_attribute("gen_ai.usage.output_tokens", 80)
    provider.shutdown()
    call("add_note", {"title": "call mom", "priority": 2})
    print("added the note")


if __name__ == "__main__":
    main(sys.argv[1])
