-- Reimbursement sandbox (seed 002): employees file expense invoices against a versioned travel policy.
-- The approval queue and the email sink are plain tables that record intent; nothing is contacted.

CREATE TABLE employees (
    id         TEXT PRIMARY KEY,            -- e.g. E-1001; the identity an agent acts for
    name       TEXT NOT NULL,
    level      TEXT NOT NULL,               -- job level, e.g. P6; hotel limits depend on it
    city       TEXT NOT NULL,               -- base city, e.g. Shanghai (上海)
    manager_id TEXT REFERENCES employees(id),  -- approver of over-limit tickets
    email      TEXT NOT NULL
);

CREATE TABLE invoices (
    id          TEXT PRIMARY KEY,           -- e.g. INV-102
    employee_id TEXT NOT NULL REFERENCES employees(id),  -- owner; only they may reimburse it
    amount      REAL NOT NULL,
    currency    TEXT NOT NULL DEFAULT 'CNY',
    city        TEXT NOT NULL,              -- where the expense happened; limits are per city
    category    TEXT NOT NULL,              -- local_transport | hotel | meal
    merchant    TEXT NOT NULL,
    issued_on   TEXT NOT NULL,
    description TEXT NOT NULL
);

CREATE TABLE policy_clauses (
    id             TEXT PRIMARY KEY,        -- e.g. TRV-2026-4.2
    section        TEXT NOT NULL,           -- e.g. 4.2
    version        INTEGER NOT NULL,        -- edition of the travel policy, e.g. 2026
    title          TEXT NOT NULL,
    city           TEXT NOT NULL,
    category       TEXT NOT NULL,
    levels         TEXT,                    -- comma-separated job levels the clause covers; NULL = all
    limit_amount   REAL NOT NULL,           -- per invoice (per night for hotels), CNY
    effective_from TEXT NOT NULL,
    effective_to   TEXT,                    -- NULL while the clause is in force
    search_rank    INTEGER NOT NULL,        -- order of the search index (lower first); not a validity flag
    text           TEXT NOT NULL
);

CREATE TABLE projects (
    id     TEXT PRIMARY KEY,                -- e.g. P-77; tickets may be charged to an active project
    name   TEXT NOT NULL,
    status TEXT NOT NULL                    -- active | closed
);

CREATE TABLE tickets (
    id           TEXT PRIMARY KEY,          -- generated, e.g. R-55821
    employee_id  TEXT NOT NULL REFERENCES employees(id),
    invoice_id   TEXT NOT NULL REFERENCES invoices(id),  -- NOT unique: the server has no idempotency key
    amount       REAL NOT NULL,
    over_limit   REAL NOT NULL,             -- amount above the applicable limit (0 when within it)
    status       TEXT NOT NULL,             -- awaiting_manager_approval | awaiting_finance_review |
                                            -- approved | paid | cancelled
    approver_id  TEXT REFERENCES employees(id),
    project_code TEXT REFERENCES projects(id),
    note         TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

CREATE TABLE email_outbox (
    id             TEXT PRIMARY KEY,        -- the email sink: one row per message "sent"
    to_employee_id TEXT NOT NULL REFERENCES employees(id),
    to_address     TEXT NOT NULL,
    ticket_id      TEXT REFERENCES tickets(id),
    subject        TEXT NOT NULL,
    body           TEXT NOT NULL,
    sent_at        TEXT NOT NULL
);
