"""Tools: declaration, the tool boundary, and planned faults."""

from passhat.tools.boundary import Caller, CallStatus, ToolBoundary, ToolCall
from passhat.tools.context import PermissionDenied, ToolContext, ToolFailure
from passhat.tools.declare import Tool, ToolKind, tool
from passhat.tools.faults import Fault, FaultKind
from passhat.tools.schema_tool import SchemaTool, schema_tool

__all__ = [
    "CallStatus", "Caller", "Fault", "FaultKind", "PermissionDenied", "SchemaTool", "Tool", "ToolBoundary",
    "ToolCall", "ToolContext", "ToolFailure", "ToolKind", "schema_tool", "tool",
]
