"""passhat in pytest: the built-in refunds suite, asserted on pass^k with its interval.

    pytest examples/pytest                             # careful (pytest.ini): passes
    pytest examples/pytest --passhat-agent hasty       # fails, listing each failing case and its first failing check

Your own agent: ``passhat_eval("refunds", my_agent)`` with an async or plain function of the episode, or
``--passhat-agent my_module:my_agent``. Every run gets a folder of its own in pytest's temporary folders
(``--passhat-out DIR`` keeps them), so ``-n auto`` (pytest-xdist) works as is.
"""

import pytest

TRIALS = 4
LOST_RESPONSES = ["refund-4812-drop-response", "email-drop-4870"]
"""Cases where the tool's response is lost after the write committed: a blind retry writes twice."""


@pytest.mark.passhat("refunds", trials=TRIALS)
def test_refunds_pass_every_time(passhat_run):
    # pass^4: every one of four trials of a case passes; .low is the lower end of its 95 % interval over cases
    assert passhat_run.pass_hat_k(TRIALS).low >= 0.75


def test_a_lost_response_is_never_retried_blindly(passhat_eval):
    run = passhat_eval("refunds", cases=LOST_RESPONSES, trials=TRIALS)
    assert run.failures() == []
