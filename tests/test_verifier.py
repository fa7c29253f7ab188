"""verifier.py: one table per family of answers, then property tests over arbitrary gold results."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt import ANSWER_FORMAT_HELP
from tests.helpers import LARGE_RESULT_ROWS
from verifier import (
    cell_key,
    cell_matches,
    collapse_whitespace,
    format_answer,
    format_cell,
    is_markdown_separator,
    normalize_cell,
    parse_float,
    split_table_row,
    strip_answer_prefix,
    strip_code_fence,
    strip_surrounding_quotes,
    strip_trailing_period,
    unwrap_answer,
    matches_exact_text,
    verify_answer,
)


def _ids(cases):
    return [repr(case[0])[:40] for case in cases]


# --- the named normalisations ---------------------------------------------------------------------

UNWRAPPERS = [
    (strip_code_fence, "```42```", "42"),
    (strip_code_fence, "```\n42\n```", "42"),
    (strip_code_fence, "```text\nParis\n```", "Paris"),
    (strip_code_fence, "```\na | 1\nb | 2\n```", "a | 1\nb | 2"),
    (strip_code_fence, "``", "``"),
    (strip_code_fence, "42", "42"),
    (strip_answer_prefix, "Answer: 42", "42"),
    (strip_answer_prefix, "answer = 42", "42"),
    (strip_answer_prefix, "FINAL ANSWER:Paris", "Paris"),
    (strip_answer_prefix, "Final answer : 7", "7"),
    (strip_answer_prefix, "Answers are 3", "Answers are 3"),
    (strip_surrounding_quotes, '"Paris"', "Paris"),
    (strip_surrounding_quotes, "'Paris'", "Paris"),
    (strip_surrounding_quotes, "`42`", "42"),
    (strip_surrounding_quotes, '"a", "b"', '"a", "b"'),
    (strip_surrounding_quotes, '"', '"'),
    (strip_surrounding_quotes, "'Paris\"", "'Paris\""),
    (strip_trailing_period, "Paris.", "Paris"),
    (strip_trailing_period, "3.", "3"),
    (strip_trailing_period, "wait...", "wait..."),
    (collapse_whitespace, "  a   b \t c ", "a b c"),
    (collapse_whitespace, "a | 1\r\n\r\nb | 2\n", "a | 1\nb | 2"),
]


@pytest.mark.parametrize("unwrap, text, expected", UNWRAPPERS, ids=[f"{u.__name__}:{t!r}" for u, t, _ in UNWRAPPERS])
def test_each_unwrapper(unwrap, text, expected):
    assert unwrap(text) == expected


@pytest.mark.parametrize("text, expected", [
    ('```\nAnswer: "Paris".\n```', "Paris"),
    ("Final answer: `42`", "42"),
    ("  answer =  'New   York'  ", "New York"),
    ("Answer:\n```\na | 1\nb | 2\n```", "a | 1\nb | 2"),
])
def test_unwrap_answer_applies_all_until_stable(text, expected):
    assert unwrap_answer(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("  \"New   York\". ", "New York"),
    ("'x'", "x"),
    ("Inc.", "Inc"),
    ("", ""),
])
def test_normalize_cell(text, expected):
    assert normalize_cell(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("42", 42.0), ("-3.5", -3.5), (".5", 0.5), ("1e-3", 0.001), ("inf", float("inf")),
    ("1,234", None), ("1_000", None), ("nan", None), ("abc", None), ("", None),
])
def test_parse_float(text, expected):
    assert parse_float(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("42", ("num", 42)), ("42.0", ("num", 42)), ("4.2e1", ("num", 42)), (" 42 ", ("num", 42)),
    ("NULL", ("null",)), ("none", ("null",)), ("", ("null",)),
    ("Paris", ("text", "paris")), ("3.5", ("text", "3.5")),
])
def test_cell_key(text, expected):
    assert cell_key(text) == expected


@pytest.mark.parametrize("line, expected", [
    ("a | b", ["a", "b"]),
    ("| a | b |", ["a", "b"]),
    ("a | b |", ["a", "b"]),
    ("a", ["a"]),
    ("a | ", ["a"]),
])
def test_split_table_row(line, expected):
    assert split_table_row(line) == expected


@pytest.mark.parametrize("line, expected", [
    ("---|---", True), ("| --- | --- |", True), ("|:---|---:|", True), ("|---|", True),
    ("---", False), ("a | ---", False), ("-- | --", False),
])
def test_is_markdown_separator(line, expected):
    assert is_markdown_separator(line) == expected


# --- formatting gold rows -------------------------------------------------------------------------

FORMATS = [
    ([(42,)], "42"),
    ([("Paris",)], "Paris"),
    ([(None,)], "NULL"),
    ([("",)], "NULL"),
    ([(True,)], "1"),
    ([(3.0,)], "3"),
    ([(2.5,)], "2.5"),
    ([(1 / 3,)], "0.3333333333"),
    ([(1e20,)], "1e+20"),
    ([(b"bytes",)], "bytes"),
    ([("New\n  York",)], "New York"),
    ([("a",), ("b",), ("c",)], "a, b, c"),
    ([("Smith, John",), ("Doe, Jane",)], "Smith, John\nDoe, Jane"),
    ([("a", 1), ("b", None)], "a | 1\nb | NULL"),
    ([], "NONE"),
]


@pytest.mark.parametrize("rows, expected", FORMATS, ids=_ids(FORMATS))
def test_format_answer(rows, expected):
    assert format_answer(rows) == expected


def test_format_help_names_every_form_format_answer_writes():
    for words in ["NULL", "NONE", "' | '", "commas", "one row per line", "no extra words"]:
        assert words in ANSWER_FORMAT_HELP
    assert len(ANSWER_FORMAT_HELP) < 500


def test_format_cell_floats_are_compact():
    assert format_cell(0.1 + 0.2) == "0.3"
    assert format_cell(-0.0) == "0"
    assert format_cell(float("inf")) == "inf"


# --- accepted answers, by family ------------------------------------------------------------------

WRAPPED = [
    ("42", [(42,)]),
    ("  42  ", [(42,)]),
    ("```\n42\n```", [(42,)]),
    ("```text\nParis\n```", [("Paris",)]),
    ("Answer: 42", [(42,)]),
    ("answer = Paris", [("Paris",)]),
    ("Final answer: Paris.", [("Paris",)]),
    ('"Paris"', [("Paris",)]),
    ("'Paris'", [("Paris",)]),
    ("`42`", [(42,)]),
    ("Paris.", [("Paris",)]),
    ("New    York", [("New York",)]),
    ('Answer: ```"Paris".```', [("Paris",)]),
    ("Answer: x", [("Answer: x",)]),  # gold text that looks like a wrapper is still matched as written
    ("Washington D.C.", [("Washington D.C.",)]),
]

INTEGERS = [
    ("42", [(42,)]),
    ("42.0", [(42,)]),
    (" 42 ", [(42,)]),
    ("+42", [(42,)]),
    ("4.2e1", [(42,)]),
    ("-7", [(-7,)]),
    ("1990.0", [("1990",)]),  # integer stored as text
    ("1990", [("1990",)]),
    ("1", [(True,)]),
    ("0", [(False,)]),
    ("1,234", [(1234,)]),  # thousands separators: whole-string reading only
    ("1,234,567", [(1234567,)]),
    ("12345678901234567890", [(12345678901234567890,)]),
    ("1,234", [("1,234",)]),
]

FLOATS = [
    ("3.14159", [(3.14159,)]),
    ("3.14", [(3.14159,)]),
    ("3.1", [(3.14159,)]),  # 1.3% off... see the rejections: 3.1 is outside; this case is 3.14 rounded
    ("0.3333", [(1 / 3,)]),
    ("33.3", [(33.333333,)]),
    ("100.9", [(100.0,)]),
    ("99.1", [(100.0,)]),
    ("3", [(3.0,)]),
    ("0", [(0.0,)]),
    ("0.0000001", [(0.0,)]),
    ("1e-7", [(1.1e-7,)]),
    ("1234.5", [(1234.5,)]),
    ("1,234.5", [(1234.5,)]),
    ("-2.5", [(-2.5,)]),
    ("3.5", [("3.5",)]),  # float stored as text
    ("3.49", [("3.5",)]),
    ("inf", [(float("inf"),)]),
]
FLOATS.remove(("3.1", [(3.14159,)]))

TEXTS = [
    ("paris", [("Paris",)]),
    ("PARIS", [("Paris",)]),
    ("New York", [("new   york",)]),
    ("Smith, John", [("Smith, John",)]),
    ('"quoted"', [("quoted",)]),
    ("quoted", [('"quoted"',)]),
    ("bytes", [(b"bytes",)]),
    ("Café", [("CAFÉ",)]),
]

NULLS = [
    ("NULL", [(None,)]),
    ("null", [(None,)]),
    ("None", [(None,)]),
    ("", [(None,)]),
    ("NULL", [("",)]),
    ("a | NULL", [("a", None)]),
    ("a | None", [("a", None)]),
    ("NULL, 2", [(None,), (2,)]),
    ("NONE", []),
    ("", []),
    ("no rows", []),
    ("Answer: no results", []),
]

LISTS = [
    ("a, b, c", [("a",), ("b",), ("c",)]),
    ("a,b,c", [("a",), ("b",), ("c",)]),
    ("c, a, b", [("a",), ("b",), ("c",)]),
    ("a\nb\nc", [("a",), ("b",), ("c",)]),
    ("1, 2, 2", [(2,), (1,), (2,)]),
    ("Smith, John\nDoe, Jane", [("Smith, John",), ("Doe, Jane",)]),
    ("Smith, John", [("Smith",), ("John",)]),  # two one-column rows
    ("Paris, 3", [("Paris", 3)]),  # one row, cells separated by commas
    ("1.5, 2.5", [(1.5,), (2.5,)]),
    ("Answer: a, b.", [("a",), ("b",)]),
    ("a, b,\nc", [("a",), ("b",), ("c",)]),
]

TABLES = [
    ("a | 1\nb | 2", [("a", 1), ("b", 2)]),
    ("b | 2\na | 1", [("a", 1), ("b", 2)]),
    ("| a | 1 |\n| b | 2 |", [("a", 1), ("b", 2)]),
    ("| a | 1 |\n|---|---|\n| b | 2 |", [("a", 1), ("b", 2)]),
    ("| name | n |\n|---|---|\n| a | 1 |\n| b | 2 |", [("a", 1), ("b", 2)]),  # header dropped
    ("a|1\nb|2", [("a", 1), ("b", 2)]),
    ("```\na | 1\nb | 2\n```", [("a", 1), ("b", 2)]),
    ("a, 1\nb, 2", [("a", 1), ("b", 2)]),  # comma-separated cells, one row per line
    ("Paris | 3.33", [("Paris", 10 / 3)]),
    ("x | 1.0 | 2.0\nx | 1.0 | 3.0", [("x", 1.0, 3.0), ("x", 1.0, 2.0)]),
    ("1 | 2\n1 | 2\n3 | 4", [(1, 2), (3, 4), (1, 2)]),
]

FLOAT_MATCHING = [
    # one float column: sorted pairing finds the only valid pairing
    ("0.991\n1.0", [(1.0,), (1.0099,)]),
    # several float columns whose rounding ties reorder the rows: bipartite matching finds it
    ("1.00 | 3\n1.00 | 5", [(1.004, 3.0), (1.001, 5.0)]),
    ("1.00 | 3.00\n1.00 | 5.00", [(1.004, 3.0), (1.001, 5.0)]),
    # one column mixing ints and floats (SQLite allows it)
    ("1 | 2.5\n1 | 1\n3.3 | NULL", [(1, 2.5), (1, 1), (3.3, None)]),
    ("2 | 1\n2.0 | 2.5", [(2.0, 2.5), (2, 1)]),
    ("NULL | 0.5\n0.25 | NULL", [(None, 0.5), (0.25, None)]),
]

ACCEPTED = [
    *[("wrapped", *case) for case in WRAPPED],
    *[("integers", *case) for case in INTEGERS],
    *[("floats", *case) for case in FLOATS],
    *[("text", *case) for case in TEXTS],
    *[("null", *case) for case in NULLS],
    *[("lists", *case) for case in LISTS],
    *[("tables", *case) for case in TABLES],
    *[("float_matching", *case) for case in FLOAT_MATCHING],
]


@pytest.mark.parametrize("family, predicted, gold", ACCEPTED, ids=[f"{f}:{p!r}"[:50] for f, p, _ in ACCEPTED])
def test_accepts(family, predicted, gold):
    assert verify_answer(predicted, gold)


# --- order ----------------------------------------------------------------------------------------

ORDERED = [
    ("a, b, c", [("a",), ("b",), ("c",)], True),
    ("c, b, a", [("a",), ("b",), ("c",)], False),
    ("a | 1\nb | 2", [("a", 1), ("b", 2)], True),
    ("b | 2\na | 1", [("a", 1), ("b", 2)], False),
    ("1.0\n2.0", [(1.0,), (2.0,)], True),
    ("2.0\n1.0", [(1.0,), (2.0,)], False),
    ("42", [(42,)], True),
]


@pytest.mark.parametrize("predicted, gold, expected", ORDERED, ids=_ids(ORDERED))
def test_order_matters_only_when_ordered(predicted, gold, expected):
    assert verify_answer(predicted, gold, ordered=True) is expected
    assert verify_answer(predicted, gold, ordered=False) is True


# --- rejected answers -----------------------------------------------------------------------------

REJECTED = [
    ("wrong value", "43", [(42,)]),
    ("wrong text", "London", [("Paris",)]),
    ("not an integer", "42.5", [(42,)]),
    ("integer text is exact", "1990.5", [("1990",)]),
    ("missing row", "a, b", [("a",), ("b",), ("c",)]),
    ("extra row", "a, b, c, d", [("a",), ("b",), ("c",)]),
    ("duplicate counts", "a, a, b", [("a",), ("b",), ("b",)]),
    ("missing table row", "a | 1", [("a", 1), ("b", 2)]),
    ("wrong column count", "a | 1 | x\nb | 2 | y", [("a", 1), ("b", 2)]),
    ("too few columns", "a\nb", [("a", 1), ("b", 2)]),
    ("cells in wrong rows", "a | 2\nb | 1", [("a", 1), ("b", 2)]),
    ("float outside tolerance", "3.1", [(3.14159,)]),
    ("float just outside", "101.2", [(100.0,)]),
    ("float near zero", "0.001", [(0.0,)]),
    ("floats in wrong rows", "a | 1.0\nb | 2.0", [("a", 2.0), ("b", 1.0)]),
    ("float column wrong", "1.0\n1.05", [(1.0,), (1.0099,)]),
    ("NULL is not zero", "0", [(None,)]),
    ("zero is not NULL", "NULL", [(0,)]),
    ("NULL is not text", "NULL", [("Paris",)]),
    ("extra words", "The answer is 42", [(42,)]),
    ("extra words after", "42 people", [(42,)]),
    ("thousands only for the whole answer", "1,234 | a", [(1234, "a")]),
    ("no rows expected", "42", []),
    ("rows expected", "NONE", [(1,)]),
    ("inf is not large", "1e308", [(float("inf"),)]),
    ("list for a table", "a, 1, b, 2", [("a", 1), ("b", 2)]),
]


@pytest.mark.parametrize("why, predicted, gold", REJECTED, ids=[why for why, _, _ in REJECTED])
def test_rejects(why, predicted, gold):
    assert not verify_answer(predicted, gold)
    assert not verify_answer(predicted, gold, ordered=True)


@pytest.mark.parametrize("predicted, gold, expected", [
    ("42.0", 42, True), ("3.14", 3.14159, True), ("3.1", 3.14159, False), ("null", None, True),
    ("PARIS", "Paris", True), ("1990.0", "1990", True), ("Paris", 3, False),
])
def test_cell_matches(predicted, gold, expected):
    assert cell_matches(predicted, gold) is expected


# --- large results (their speed: benchmarks/bench_verifier.py) ----------------------------------------------


@pytest.mark.parametrize("make_row", list(LARGE_RESULT_ROWS.values()), ids=list(LARGE_RESULT_ROWS))
def test_five_thousand_rows_are_matched_as_a_bag(make_row):
    gold = [make_row(i) for i in range(5000)]
    shuffled = random.Random(0).sample(gold, len(gold))
    assert verify_answer(format_answer(shuffled), gold)
    wrong = format_answer(shuffled[1:] + [(-1,) * len(gold[0])])
    assert not verify_answer(wrong, gold)


# --- properties -----------------------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="|\n\r"), max_size=12)
_CELLS = [
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=True),
    _TEXT,
    st.none(),
    st.booleans(),
]


@st.composite
def gold_results(draw, max_columns=4, max_rows=12, cells=st.one_of(*_CELLS)):
    num_columns = draw(st.integers(1, max_columns))
    return draw(st.lists(st.tuples(*[cells] * num_columns), min_size=1, max_size=max_rows))


@settings(max_examples=400, deadline=None)
@given(gold=gold_results())
def test_property_formatted_gold_is_accepted(gold):
    answer = format_answer(gold)
    assert verify_answer(answer, gold, ordered=True)
    assert verify_answer(answer, gold, ordered=False)


@settings(max_examples=300, deadline=None)
@given(gold=gold_results(), seed=st.integers(0, 2**32 - 1))
def test_property_shuffled_gold_is_accepted_unordered(gold, seed):
    shuffled = random.Random(seed).sample(gold, len(gold))
    assert verify_answer(format_answer(shuffled), gold, ordered=False)


@settings(max_examples=300, deadline=None)
@given(gold=gold_results(cells=st.integers(-(10**12), 10**12)), data=st.data())
def test_property_changed_integer_is_rejected(gold, data):
    row = data.draw(st.integers(0, len(gold) - 1))
    column = data.draw(st.integers(0, len(gold[0]) - 1))
    changed = [list(values) for values in gold]
    changed[row][column] += 1
    answer = format_answer([tuple(values) for values in changed])
    assert not verify_answer(answer, gold, ordered=False)
    assert not verify_answer(answer, gold, ordered=True)


@settings(max_examples=200, deadline=None)
@given(gold=gold_results(cells=st.floats(min_value=1.0, max_value=1e6)), data=st.data())
def test_property_float_off_by_five_percent_is_rejected(gold, data):
    row = data.draw(st.integers(0, len(gold) - 1))
    column = data.draw(st.integers(0, len(gold[0]) - 1))
    changed = [list(values) for values in gold]
    changed[row][column] *= 1.05
    # only a pure answer check if no other gold value sits where the changed one moved
    if not any(abs(value - changed[row][column]) <= 0.02 * value for values in gold for value in values):
        assert not verify_answer(format_answer([tuple(values) for values in changed]), gold)


@settings(max_examples=200, deadline=None)
@given(gold=gold_results(max_columns=1, cells=_TEXT.filter(lambda text: normalize_cell(text) != "")))
def test_property_one_column_text_round_trips_through_the_comma_or_line_list(gold):
    assert verify_answer(format_answer(gold), gold)


# --- exact text: what the relaxations add (measured, never rewarded) --------------------------------


@pytest.mark.parametrize(
    ("predicted", "gold", "exact"),
    [
        ("42", [(42,)], True),
        ("  42\n", [(42,)], True),  # surrounding whitespace only
        (42, [(42,)], True),  # a JSON number from the tool call
        ("42.0", [(42,)], False),
        ("Answer: 42", [(42,)], False),
        ("`42`", [(42,)], False),
        ("Paris, Rome", [("Paris",), ("Rome",)], True),
        ("Rome, Paris", [("Paris",), ("Rome",)], False),  # another row order
        ("paris, rome", [("Paris",), ("Rome",)], False),
        ("Paris | 3", [("Paris", 3)], True),
        ("Paris, 3", [("Paris", 3)], False),
        ("NONE", [], True),
        ("no rows", [], False),
    ],
)
def test_exact_text_accepts_only_the_format_asked_for_which_the_relaxed_verifier_includes(predicted, gold, exact):
    assert matches_exact_text(predicted, gold) is exact
    assert verify_answer(predicted if isinstance(predicted, str) else str(predicted), gold)  # all of them are right
