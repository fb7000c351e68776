"""Shadow runs: a candidate agent replayed on production conversations, and where it diverges.

``traces`` reads the conversations (JSONL, or OTLP/JSON through ``otlp``), redacted before anything else;
``cases`` turns each into a shadow case; ``replay`` serves production's recorded reads in the sandbox;
``divergence`` pairs the writes and compares the replies; ``report`` builds ``shadow.json``; ``run``
ties them together; ``promote`` turns a conversation into a regression case. See docs/shadow.md.
"""

from passhat.shadow.promote import promote
from passhat.shadow.run import ShadowRun, shadow
from passhat.shadow.traces import Conversation, Recorded, load_traces

__all__ = ["Conversation", "Recorded", "ShadowRun", "load_traces", "promote", "shadow"]
