"""Click commands that are defined outside ``passhat.cli`` and registered there with ``main.add_command``.

Keeping each command in its own module keeps ``cli.py`` small and lets several people add commands
without editing the same lines.
"""
