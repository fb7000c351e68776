-- A small shop, in SQL that SQLite and PostgreSQL both read: the world of the sqlite/ and postgres/ suites.
CREATE TABLE products (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL,
    price DOUBLE PRECISION NOT NULL,
    stock INTEGER NOT NULL
);

CREATE TABLE orders (
    id         INTEGER PRIMARY KEY,
    customer   TEXT NOT NULL,
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity   INTEGER NOT NULL,
    status     TEXT NOT NULL,            -- pending | shipped | delivered | refunded
    note       TEXT
);

CREATE TABLE refunds (
    id       INTEGER PRIMARY KEY,        -- the agent picks the next number
    order_id INTEGER NOT NULL REFERENCES orders(id),
    amount   DOUBLE PRECISION NOT NULL,
    reason   TEXT NOT NULL
);
