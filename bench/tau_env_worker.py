"""τ-bench's side of the τ-bench benchmarks: its own ``Env`` plays scripts sent on stdin, one per line.

Run by bench/bench_tau_world.py and bench/bench_tau_agreement.py as ``PYTHON bench/tau_env_worker.py
CHECKOUT``, where PYTHON has τ-bench's requirements installed (``pip install -e CHECKOUT`` in a venv of
its own: passhat's venv stays without litellm and the model SDKs). It imports nothing of passhat.

A request is ``{"env", "split", "task", "script": [{"tool", "args"} | {"say"}], "digest": bool}``. The
trial is τ-bench's: ``env.reset(task_index)`` (which re-reads the JSON data), one ``env.step`` per
step (a message is a ``respond`` action), and a last ``respond`` that the user answers with
``###STOP###`` unless a terminating tool ended the episode before; ``step`` then computes the reward
(which re-reads the data again and replays the gold actions). The answer is ``{"reward", "ms" (the
whole trial, wall time), "cpu_ms" (the same in CPU time), "tools" (each call's own ``invoke``, CPU
time in ms, ``null`` when the call did not run),
"digest"}``; ``digest`` (when asked) is a sha256 per collection of the final data, taken just before the
reward replaced it: ``json.dumps(collection, sort_keys=True)``, so ``25`` and ``25.0`` differ.

The simulated user is a stand-in that answers at once (the model-played user is not what is measured).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from typing import Any

sys.path.insert(0, sys.argv[1])

from tau_bench.envs import get_env  # noqa: E402
from tau_bench.envs.user import BaseUserSimulationEnv  # noqa: E402
from tau_bench.types import RESPOND_ACTION_NAME, Action  # noqa: E402

STOP = "###STOP###"


class ScriptedUser(BaseUserSimulationEnv):
    """Answers every message; ``###STOP###`` when told the script is over."""

    def __init__(self) -> None:
        self.stop_next = False

    def reset(self, instruction: str | None = None) -> str:
        self.stop_next = False
        return "Hi, I need some help."

    def step(self, content: str) -> str:
        return STOP if self.stop_next else "Please go on."

    def get_total_cost(self) -> float:
        return 0.0


class Timed:
    """A tool class whose ``invoke`` records its own time while ``armed`` (the trial's calls, not the
    reward's replay of the gold actions)."""

    def __init__(self, cls: Any, log: list[float | None]) -> None:
        self.cls, self.log, self.armed = cls, log, False

    def invoke(self, **kwargs: Any) -> Any:
        if not self.armed:
            return self.cls.invoke(**kwargs)
        self.armed = False
        t = time.thread_time()
        try:
            return self.cls.invoke(**kwargs)
        finally:
            self.log[-1] = (time.thread_time() - t) * 1000

    def get_info(self) -> Any:
        return self.cls.get_info()


def digest(data: dict[str, Any]) -> dict[str, str]:
    return {name: hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()
            for name, records in data.items()}


class Worker:
    def __init__(self) -> None:
        self.envs: dict[tuple[str, str], Any] = {}
        self.log: list[float | None] = []
        self.final: dict[str, str] | None = None
        self.want_digest = False

    def env(self, name: str, split: str) -> Any:
        if (name, split) not in self.envs:
            env = get_env(name, user_strategy="human", user_model="none", task_split=split, task_index=0)
            env.user = ScriptedUser()
            env.tools_map = {n: Timed(c, self.log) for n, c in env.tools_map.items()}
            reward = env.calculate_reward

            def calculate_reward() -> Any:  # the trial's final data, before the reward replaces it
                if self.want_digest:
                    self.final = digest(env.data)
                return reward()

            env.calculate_reward = calculate_reward
            self.envs[(name, split)] = env
        return self.envs[(name, split)]

    def trial(self, request: dict[str, Any]) -> dict[str, Any]:
        env = self.env(request["env"], request["split"])
        self.want_digest, self.final, self.log[:] = bool(request.get("digest")), None, []
        steps = request["script"]
        t, cpu = time.perf_counter(), time.process_time()
        env.reset(task_index=request["task"])
        done, reward = False, 0.0
        for i, step in enumerate([*steps, {"say": "Goodbye."}]):
            if "say" in step:
                env.user.stop_next = i == len(steps)
                response = env.step(Action(name=RESPOND_ACTION_NAME, kwargs={"content": step["say"]}))
            else:
                self.log.append(None)
                tool = env.tools_map.get(step["tool"])
                if tool is not None:
                    tool.armed = True
                response = env.step(Action(name=step["tool"], kwargs=step["args"]))
                if tool is not None:
                    tool.armed = False
            if response.done:
                done, reward = True, response.reward
                break
        ms, cpu_ms = (time.perf_counter() - t) * 1000, (time.process_time() - cpu) * 1000
        if not done:
            raise RuntimeError("the episode did not end")
        tools = self.log + [None] * (sum("tool" in s for s in steps) - len(self.log))
        return {"reward": reward, "ms": ms, "cpu_ms": cpu_ms, "tools": tools, "digest": self.final}


def main() -> None:
    worker = Worker()
    for line in sys.stdin:
        try:
            answer = worker.trial(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - reported to the benchmark, which stops
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
