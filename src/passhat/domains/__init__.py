"""Built-in sandboxed domains, one package per business system (schema, fixtures, policy, tools, cases)."""
