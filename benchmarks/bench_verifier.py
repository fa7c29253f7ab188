"""Verifier throughput: calls per second on a 1x1 answer and on a 1,000-row two-column table.

    python -m pytest benchmarks/bench_verifier.py --benchmark-only

(pyproject's addopts has --benchmark-skip, so a plain `pytest` run skips these; --benchmark-only wins.)
"""

from __future__ import annotations

import random

import pytest

from tests.helpers import LARGE_RESULT_ROWS

from verifier import format_answer, verify_answer

TABLE_ROWS = 1000


def _table(make_row):
    gold = [make_row(i) for i in range(TABLE_ROWS)]
    answer = format_answer(random.Random(0).sample(gold, len(gold)))
    return answer, gold


@pytest.mark.parametrize("predicted, gold", [
    ("42", [(42,)]),
    ("Answer: `New York`.", [("new york",)]),
    ("3.14", [(3.14159,)]),
], ids=["int", "wrapped_text", "float"])
def test_one_value(benchmark, predicted, gold):
    assert benchmark(verify_answer, predicted, gold) is True


@pytest.mark.parametrize("make_row", [
    lambda i: (f"name {i}", i),
    lambda i: (f"name {i % 50}", i * 1.37),
    lambda i: (round(i * 0.37, 2), (i * 7919 % 1000) / 7),
], ids=["text_int", "text_float", "two_floats"])
def test_thousand_row_table(benchmark, make_row):
    answer, gold = _table(make_row)
    assert benchmark(verify_answer, answer, gold) is True


def test_thousand_row_table_ordered(benchmark):
    gold = [(f"name {i}", i) for i in range(TABLE_ROWS)]
    assert benchmark(verify_answer, format_answer(gold), gold, ordered=True) is True


def test_thousand_row_table_wrong(benchmark):
    gold = [(f"name {i}", i * 1.37) for i in range(TABLE_ROWS)]
    answer = format_answer(gold[:-1] + [("name x", 0.0)])
    assert benchmark(verify_answer, answer, gold) is False


@pytest.mark.parametrize("make_row", list(LARGE_RESULT_ROWS.values()), ids=list(LARGE_RESULT_ROWS))
def test_five_thousand_rows_not_quadratic(benchmark, make_row):
    """Bags of 5,000 rows, right and wrong: the matcher must stay near linear (was: a timed assert in tests/)."""
    gold = [make_row(i) for i in range(5000)]
    shuffled = random.Random(0).sample(gold, len(gold))
    wrong = format_answer(shuffled[1:] + [(-1,) * len(gold[0])])
    right = format_answer(shuffled)
    assert benchmark(lambda: (verify_answer(right, gold), verify_answer(wrong, gold))) == (True, False)
