"""An environment: the agent's toolkit, the user's, the policy, and the hook run after every call."""

import json
from typing import Any

from pydantic import BaseModel

from tau2.environment.toolkit import ToolKitBase
from tau2.utils import update_pydantic_model_with_dict


class Environment:
    def __init__(self, domain_name: str, policy: str, tools: ToolKitBase,
                 user_tools: ToolKitBase | None = None) -> None:
        self.domain_name = domain_name
        self.policy = policy
        self.tools = tools
        self.user_tools = user_tools
        self.sync_tools()

    def get_policy(self) -> str:
        return self.policy

    def sync_tools(self) -> None:
        """Bring the two toolkits' databases into agreement; domains with a user side override it."""

    def make_tool_call(self, tool_name: str, requestor: str = "assistant", **kwargs: Any) -> Any:
        kit = self.user_tools if requestor == "user" else self.tools
        return kit.use_tool(tool_name, **kwargs)

    def run_env_function_call(self, call: Any) -> Any:
        kit = self.user_tools if call.env_type == "user" else self.tools
        result = getattr(kit, call.func_name)(**call.arguments)
        self.sync_tools()
        return result

    def set_state(self, initialization_data: Any, initialization_actions: Any, message_history: list) -> None:
        if initialization_data is not None and initialization_data.agent_data is not None:
            self.tools.db = update_pydantic_model_with_dict(self.tools.db, initialization_data.agent_data)
        if initialization_data is not None and initialization_data.user_data is not None:
            self.user_tools.db = update_pydantic_model_with_dict(self.user_tools.db, initialization_data.user_data)
        for call in initialization_actions or []:
            self.run_env_function_call(call)
        self.sync_tools()

    @classmethod
    def to_json_str(cls, resp: Any) -> str:
        if isinstance(resp, str):
            return resp
        if isinstance(resp, BaseModel):
            resp = resp.model_dump()
        return json.dumps(resp, default=str)
