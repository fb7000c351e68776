"""The scripted user says its hidden goal when the agent asks what it wants, and only then."""

from __future__ import annotations

import asyncio

import pytest

from passhat.cases.model import UserSpec
from passhat.users import ScriptedUser

GOAL = "I want a refund for order 4812: the blender arrived broken."


def answers(spec: UserSpec, *agent_texts: str) -> list[str | None]:
    user = ScriptedUser(spec)
    return [asyncio.run(user.reply(text)) for text in agent_texts]


@pytest.mark.parametrize("question", [
    "Hello! How can I help you today?",
    "Hi there.\nHow   may I\tassist you?",
    "What can I do for you?",
    "Sure. What do you need?",
    "What would you like me to do?",
    "What's the problem?",
    "What\u2019s the issue with your order?",
    "What brings you here today?",
    "WHAT ARE YOU LOOKING FOR?",
])
def test_asked_what_it_wants_the_user_says_its_goal(question: str) -> None:
    assert answers(UserSpec(goal=GOAL), question) == [GOAL]


def test_facts_are_still_told_on_request_and_with_the_goal() -> None:
    spec = UserSpec(goal=GOAL, facts={"order_id": "4812", "email": "a@b.c"})
    assert answers(spec, "Which order id?", "How can I help? Also, what is your email?", "What colour was it?") == [
        "order id: 4812", f"{GOAL} email: a@b.c", "I don't know."]


def test_closing_questions_and_statements_do_not_repeat_the_goal() -> None:
    spec = UserSpec(goal=GOAL)
    assert answers(spec, "Is there anything else I can help you with?") == ["I don't know."]
    assert answers(spec, "Your refund is on its way.") == [None]


def test_scripted_turns_come_first() -> None:
    spec = UserSpec(goal=GOAL, turns=[{"say": "Hang on, let me find the receipt."}])
    assert answers(spec, "How can I help?", "How can I help?") == ["Hang on, let me find the receipt.", GOAL]


def test_without_a_goal_the_question_gets_what_it_always_got() -> None:
    assert answers(UserSpec(facts={"order_id": "4812"}), "How can I help?") == ["I don't know."]
