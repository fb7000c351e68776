"""Serving a trial's tool boundary to agents that run elsewhere: plain HTTP, MCP and an OTLP receiver.

Lower than :mod:`passhat.agents` (the service, command and process agents use it), higher than the
episode it exposes.
"""

from passhat.serve.endpoint import CallAnswer, TrialEndpoint
from passhat.serve.protocol import PROTOCOL, AgentReply, ReportedUsage, TrialStart
from passhat.serve.server import ToolServer

__all__ = ["PROTOCOL", "AgentReply", "CallAnswer", "ReportedUsage", "ToolServer", "TrialEndpoint", "TrialStart"]
