"""Small databases and rows that tests build on the fly (no data files needed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from agent_env import DEFAULT_STEP_BUDGET
from prompt import system_prompt


def make_shop_database(path: Path) -> Path:
    """A two-table database with a foreign key, a float column and a NULL."""
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
        CREATE TABLE "order" (
            id INTEGER PRIMARY KEY,
            customer_id INTEGER REFERENCES customer(id),
            amount REAL,
            note TEXT
        );
        INSERT INTO customer VALUES (1, 'Ada', 'London'), (2, 'Grace', 'New York'), (3, 'Linus', 'Helsinki');
        INSERT INTO "order" VALUES (1, 1, 10.5, NULL), (2, 1, 4.25, 'gift'), (3, 2, 99.0, NULL);
        """
    )
    connection.commit()
    connection.close()
    return path


def shop_row(db_path: Path, question: str, gold_sql: str) -> dict[str, Any]:
    return {
        "prompt": [{"role": "system", "content": system_prompt(DEFAULT_STEP_BUDGET)},
                   {"role": "user", "content": question}],
        "db_path": str(db_path),
        "question": question,
        "gold_sql": gold_sql,
        "hardness": "easy",
        "db_id": "shop",
    }


# Rows of large results (5,000 rows of each kind): the bag matcher must accept them shuffled and stay near
# linear; tests/test_verifier.py checks the answers, benchmarks/bench_verifier.py times them.
LARGE_RESULT_ROWS = {
    "text_int": lambda i: (f"name {i}", i),
    "text_float": lambda i: (f"name {i}", i * 1.37),
    "float": lambda i: (i * 0.5,),
    "equal_floats": lambda i: (0.5, 1.5),
    "close_floats": lambda i: (37.7 + (i % 97) * 1e-4, -122.4 + (i % 89) * 1e-4),
}
