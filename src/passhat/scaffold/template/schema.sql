CREATE TABLE employees (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE tickets (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES employees(id),
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
