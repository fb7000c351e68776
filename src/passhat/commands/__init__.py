"""The click commands of ``passhat``, one module each, listed in ``passhat.cli.COMMANDS``.

``passhat.cli`` imports a module only when its command runs, so a command module may import whatever
it needs at the top. A command reports bad input by raising :class:`passhat.errors.PasshatError` (or
calling ``common.fail``): ``passhat.cli`` prints it, once, and exits 2.
"""
