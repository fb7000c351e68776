"""A one-bug workspace for testing the workspace world: fix ``mean`` without touching the tests."""

from pathlib import Path

from passhat.domain import Domain
from passhat.tools.files import WORKSPACE_TOOLS

HERE = Path(__file__).parent

domain = Domain("calc", workspace=HERE / "repo", policy="Fix bugs; never edit tests or LICENSE.", tools=WORKSPACE_TOOLS,
                command_env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
