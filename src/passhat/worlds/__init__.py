"""World kinds beyond the in-memory SQLite default (docs/design/019).

Each kind implements :mod:`passhat.world.kind`; nothing above the world seam knows which one a trial
has. The workspace kind is declared with ``Domain(workspace=...)``.
"""
