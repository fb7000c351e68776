"""The change log of a PostgreSQL world: triggers that write each changed row's key and previous value.

Installed once, in the template, so every trial database cloned from it has it. Each user table gets
an ``AFTER INSERT OR UPDATE OR DELETE`` row trigger and a ``BEFORE TRUNCATE`` statement trigger; both
call ``SECURITY DEFINER`` functions owned by the harness's role, which append to ``_passhat.log``.
A trial connects as a role of its own that has no privilege on schema ``_passhat`` (it can neither read
nor change the log) and does not own the tables (it cannot drop or disable their triggers). The diff
reads the log: the first entry of a key holds the row before the trial; the table holds it after. So
the diff costs O(rows changed), whatever the size of the database.

A table without a primary key has no row identity to look a row up by; its entries keep the whole row
before (``old``) and after (``new``) each change, and the diff is the net multiset difference.
"""

from __future__ import annotations

from typing import Any

SCHEMA = "_passhat"
LOG = f"{SCHEMA}.log"
TRIGGER = "_passhat_log"

FUNCTIONS = f"""
CREATE SCHEMA {SCHEMA};
REVOKE ALL ON SCHEMA {SCHEMA} FROM PUBLIC;
CREATE TABLE {LOG} (seq bigserial PRIMARY KEY, tbl text NOT NULL, pk jsonb, old jsonb, new jsonb);
CREATE INDEX ON {LOG} (tbl, pk, seq);

CREATE FUNCTION {SCHEMA}.log_row() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  o jsonb; n jsonb; ko jsonb; kn jsonb;
BEGIN
  -- TG_ARGV[0]: the table as diffs name it; the rest: its primary-key columns in key order
  IF TG_OP <> 'INSERT' THEN o := to_jsonb(OLD); END IF;
  IF TG_OP <> 'DELETE' THEN n := to_jsonb(NEW); END IF;
  IF TG_NARGS = 1 THEN
    INSERT INTO {LOG} (tbl, old, new) VALUES (TG_ARGV[0], o, n);
    RETURN NULL;
  END IF;
  IF o IS NOT NULL THEN
    SELECT jsonb_agg(o -> TG_ARGV[i] ORDER BY i) INTO ko FROM generate_series(1, TG_NARGS - 1) AS i;
    INSERT INTO {LOG} (tbl, pk, old) VALUES (TG_ARGV[0], ko, o);
  END IF;
  IF n IS NOT NULL THEN
    SELECT jsonb_agg(n -> TG_ARGV[i] ORDER BY i) INTO kn FROM generate_series(1, TG_NARGS - 1) AS i;
    IF ko IS DISTINCT FROM kn THEN
      INSERT INTO {LOG} (tbl, pk, old) VALUES (TG_ARGV[0], kn, NULL);
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION {SCHEMA}.log_truncate() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  keys text := '';
BEGIN
  -- every row is deleted: log each one as the row trigger would (TRUNCATE fires no row triggers)
  IF TG_NARGS = 1 THEN
    EXECUTE format('INSERT INTO {LOG} (tbl, old) SELECT %L, to_jsonb(t) FROM %I.%I t',
                   TG_ARGV[0], TG_TABLE_SCHEMA, TG_TABLE_NAME);
    RETURN NULL;
  END IF;
  FOR i IN 1 .. TG_NARGS - 1 LOOP
    keys := keys || CASE WHEN i > 1 THEN ', ' ELSE '' END || format('to_jsonb(t.%I)', TG_ARGV[i]);
  END LOOP;
  EXECUTE format('INSERT INTO {LOG} (tbl, pk, old) SELECT %L, jsonb_build_array(%s), to_jsonb(t) FROM %I.%I t',
                 TG_ARGV[0], keys, TG_TABLE_SCHEMA, TG_TABLE_NAME);
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION {SCHEMA}.log_row() FROM PUBLIC;
REVOKE ALL ON FUNCTION {SCHEMA}.log_truncate() FROM PUBLIC;

-- the whole diff in one round trip: for each table the log names, its lookup (stored at build time)
CREATE TABLE {SCHEMA}.tables (name text PRIMARY KEY, lookup text NOT NULL);
CREATE FUNCTION {SCHEMA}.diff() RETURNS TABLE (tbl text, pk jsonb, old jsonb, new jsonb)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT t.name, t.lookup FROM {SCHEMA}.tables t
           WHERE t.name IN (SELECT DISTINCT l.tbl FROM {LOG} l) ORDER BY t.name LOOP
    RETURN QUERY EXECUTE r.lookup USING r.name;
  END LOOP;
  -- the user tables now, to find tables a trial created (or dropped)
  RETURN QUERY SELECT '#tables'::text, NULL::jsonb, coalesce(jsonb_agg(
      CASE WHEN n.nspname = 'public' THEN c.relname::text ELSE n.nspname || '.' || c.relname END), '[]'), NULL::jsonb
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', '{SCHEMA}') AND n.nspname NOT LIKE 'pg\\_%';
END $$;
REVOKE ALL ON FUNCTION {SCHEMA}.diff() FROM PUBLIC;

-- every table's lookup once, on an empty log: a new session's caches are filled before its trial starts
CREATE FUNCTION {SCHEMA}.warm() RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT t.name, t.lookup FROM {SCHEMA}.tables t LOOP
    EXECUTE r.lookup USING r.name;
  END LOOP;
  PERFORM * FROM {SCHEMA}.diff();
END $$;
REVOKE ALL ON FUNCTION {SCHEMA}.warm() FROM PUBLIC;
"""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def install(conn: Any, tables: list[tuple[str, str, str, tuple[str, ...]]], lookups: dict[str, str]) -> None:
    """Create the log and the functions, the two triggers of each ``(schema, table, name, key)``, and the
    diff's lookup query of each table (``$1``: the table's name in the log)."""
    conn.execute(FUNCTIONS)
    for name, lookup in lookups.items():
        conn.execute(f"INSERT INTO {SCHEMA}.tables VALUES (%s, %s)", (name, lookup))
    for schema, table, name, key in tables:
        target = f"{quote_ident(schema)}.{quote_ident(table)}"
        args = ", ".join(_literal(a) for a in (name, *key))
        conn.execute(f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE ON {target} "
                     f"FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.log_row({args})")
        conn.execute(f"CREATE TRIGGER {TRIGGER}_truncate BEFORE TRUNCATE ON {target} "
                     f"FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.log_truncate({args})")
