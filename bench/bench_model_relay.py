"""What the model relay adds to one streamed model call (docs/design/022, 4b).

An in-process agent streams the same healthy chat completion (tests/stalling.py: six SSE pieces, a
keep-alive among them) REQUESTS times straight from a local provider, then REQUESTS times through its
trial's relay (``episode.model_urls``), alternating in rounds so load on the machine hits both alike.
Prints the median wall time per call of each, and the CPU this process spent per call (the relay runs in
it; the provider is a thread of it too). Run: ``python bench/bench_model_relay.py [REQUESTS]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ROUND = 20


def main(requests: int) -> None:
    import httpx2

    import passhat
    from tests.raw_http import started
    from tests.stalling import StallingProvider

    walls: dict[str, list[float]] = {"direct": [], "relay": []}
    cpu = {"direct": 0.0, "relay": 0.0}

    with started(StallingProvider) as start:
        provider = start("by_model")
        direct = f"http://127.0.0.1:{provider.port}/v1"

        async def agent(episode: Any) -> str:
            async with httpx2.AsyncClient() as http:
                for _ in range(max(1, requests // ROUND)):
                    for label, base in (("direct", direct), ("relay", episode.model_urls["openai"])):
                        used = time.process_time()
                        for _ in range(ROUND):
                            began = time.perf_counter()
                            async with http.stream("POST", f"{base}/chat/completions",
                                                   json={"model": "healthy", "stream": True}) as answer:
                                async for _ in answer.aiter_raw():
                                    pass
                            walls[label].append(time.perf_counter() - began)
                        cpu[label] += time.process_time() - used
            return "done"

        folder = Path(tempfile.mkdtemp(prefix="passhat-bench-relay-"))
        notes = ROOT / "tests" / "data" / "notes"
        (folder / "cases").mkdir()
        text = (notes / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(notes / "domain.py"))
        (folder / "cases" / "c.yaml").write_text(text + "limits: {max_seconds: 600}\n")
        passhat.evaluate(str(folder / "cases"), agent, trials=1, out=folder / "run", sanity=False,
                         agent_model_relay={"openai": direct})
    for label, times in walls.items():
        print(f"{label:7} median {statistics.median(times) * 1000:6.2f} ms wall, "
              f"{cpu[label] / len(times) * 1000:5.2f} ms CPU per streamed call ({len(times)} calls)")
    added = statistics.median(walls["relay"]) - statistics.median(walls["direct"])
    print(f"the relay adds {added * 1000:.2f} ms per call")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
