"""Helpers for testing agents and harness code without the internet (e.g. a fake model server)."""
