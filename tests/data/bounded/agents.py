"""Hostile in-process agents for the run's bounds (issue 25, item 3): each misbehaves in one way."""

import asyncio
import os
import time


class Boom(BaseException):
    """Not an Exception: raised inside a task it used to stop the event loop (the whole run)."""


async def _add(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})


async def raises_base_exception(ep):
    await _add(ep)
    raise Boom("agent-defined BaseException")


async def raises_generator_exit(ep):
    await _add(ep)
    raise GeneratorExit


async def blocks_then_answers(ep):
    """Blocks the loop past the limit (PASSHAT_TEST_BLOCK_S seconds), then gives a right answer."""
    await _add(ep)
    time.sleep(float(os.environ.get("PASSHAT_TEST_BLOCK_S", "1.0")))
    return "added the note"


async def blocks_trial_zero(ep):
    """Trial 0 blocks the loop once the others have started; the others would pass in time."""
    await asyncio.sleep(0.1)
    if ep.trial == 0:
        time.sleep(1.0)
    else:
        await asyncio.sleep(0.2)
    await _add(ep)
    return "added the note"


async def spins(ep):
    await _add(ep)
    while True:  # never awaits: only a process of its own can be stopped
        pass


async def blocks_in_a_subtask(ep):
    """The blocking code runs in a task the agent created: still this trial's."""
    await _add(ep)

    async def helper():
        time.sleep(float(os.environ.get("PASSHAT_TEST_BLOCK_S", "1.0")))

    await asyncio.create_task(helper())
    return "added the note"


async def trials_0_and_1_block_for_good(ep):
    """Trial 0 holds the loop in a CPU loop, trial 1 in ``time.sleep(60)``, once the others have started;
    the others would pass in time."""
    await asyncio.sleep(0.1)
    await _add(ep)
    if ep.trial == 0:
        while True:
            pass
    if ep.trial == 1:
        time.sleep(60)
    await asyncio.sleep(0.2)
    return "added the note"

