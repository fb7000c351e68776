"""User simulators."""

from passhat.users.scripted import ScriptedUser

__all__ = ["ScriptedUser"]
