"""A Python agent that allocates 1 GiB, 16 MiB at a time, for ``--isolate process`` under a memory bound
(tests/agents/test_agent_bounds.py): the bound must stop it first."""


async def hog(episode):
    chunks = [bytearray(16 << 20) for _ in range(64)]
    return f"allocated {len(chunks) * 16} MiB: no bound held"
