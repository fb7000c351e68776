"""The real package imports its agents, LLM clients and runner here; passhat must never run this file."""

raise ImportError("tau2/__init__.py ran: passhat's importer must stand in a bare package for `tau2`")
