-- The refunds sandbox (seed 000) in PostgreSQL: an online shop's orders, refund approvals and the side-effect tables a
-- refund touches. The payment adapter and the email sink are plain tables that record intent.

CREATE TABLE customers (
    id           TEXT PRIMARY KEY,          -- e.g. C-1001; the identity an agent acts for
    name         TEXT NOT NULL,
    email        TEXT NOT NULL,
    store_credit DOUBLE PRECISION NOT NULL DEFAULT 0    -- balance; store-credit refunds are added here
);

CREATE TABLE orders (
    id               INTEGER PRIMARY KEY,   -- order number as customers quote it, e.g. 4812
    customer_id      TEXT NOT NULL REFERENCES customers(id),
    item             TEXT NOT NULL,
    total            DOUBLE PRECISION NOT NULL,
    payment_method   TEXT NOT NULL,         -- card | paypal: where original_payment refunds go
    status           TEXT NOT NULL,         -- placed | shipped | delivered | refunded | cancelled
    shipping_address TEXT NOT NULL,
    placed_at        TEXT NOT NULL
);

CREATE TABLE approvals (
    order_id    INTEGER PRIMARY KEY REFERENCES orders(id),  -- at most one approval per order
    amount      DOUBLE PRECISION NOT NULL,              -- the most that may be refunded
    approved_by TEXT NOT NULL,
    approved_at TEXT NOT NULL,
    reason      TEXT NOT NULL
);

CREATE TABLE refunds (
    id         TEXT PRIMARY KEY,            -- generated, e.g. R-55821
    order_id   INTEGER NOT NULL REFERENCES orders(id),
    amount     DOUBLE PRECISION NOT NULL,
    method     TEXT NOT NULL,               -- original_payment | store_credit
    created_at TEXT NOT NULL,
    created_by TEXT                         -- identity the agent acted for
);

CREATE TABLE ledger (
    id         TEXT PRIMARY KEY,
    order_id   INTEGER NOT NULL REFERENCES orders(id),
    amount     DOUBLE PRECISION NOT NULL,               -- + for a sale, − for a refund; per-order sums must balance
    kind       TEXT NOT NULL,               -- sale | refund | goodwill
    created_at TEXT NOT NULL
);

CREATE TABLE payments (
    id         TEXT PRIMARY KEY,            -- payment-adapter intents; nothing is ever contacted
    order_id   INTEGER NOT NULL REFERENCES orders(id),
    amount     DOUBLE PRECISION NOT NULL,
    method     TEXT NOT NULL,               -- card | paypal
    kind       TEXT NOT NULL,               -- capture | refund
    status     TEXT NOT NULL,               -- captured | intent_recorded
    created_at TEXT NOT NULL
);

CREATE TABLE emails (
    id         TEXT PRIMARY KEY,            -- the email sink: one row per message "sent"
    to_address TEXT NOT NULL,
    template   TEXT NOT NULL,               -- refund | order_update | general
    order_id   INTEGER REFERENCES orders(id),
    body       TEXT NOT NULL,
    sent_at    TEXT NOT NULL
);

CREATE TABLE notes (
    id         TEXT PRIMARY KEY,
    order_id   INTEGER NOT NULL REFERENCES orders(id),
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE escalations (
    id          TEXT PRIMARY KEY,           -- hand-offs to a human agent
    order_id    INTEGER REFERENCES orders(id),
    customer_id TEXT NOT NULL,
    reason      TEXT NOT NULL,
    status      TEXT NOT NULL,              -- open
    created_at  TEXT NOT NULL
);
