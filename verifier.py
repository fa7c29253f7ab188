"""Is this answer right? The one verifier behind the training reward, the eval suite and the oracle.

verify_answer reads the answer as written and unwrapped (unwrap_answer), parses each reading into the
row sets it could mean (candidate_row_sets), and accepts if any of them matches the gold rows
(rows_match_ordered / rows_match_unordered), each cell compared by the gold cell's type (gold_key,
cell_key, numbers_close). format_answer writes gold rows the way prompt.ANSWER_FORMAT_HELP asks the model to.

Pure functions only: no I/O, no state. Each normalisation is one named function whose docstring says
what it accepts; tests/test_verifier.py holds one table per family of answers.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence

RELATIVE_TOLERANCE = 0.01  # float cells: 1% of the larger magnitude ...
ABSOLUTE_TOLERANCE = 1e-6  # ... or this much, for values near zero
NULL_WORDS = frozenset({"", "null", "none"})
NO_ROWS_WORDS = NULL_WORDS | {"no rows", "no results", "empty"}

_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf(?:inity)?)", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?\d+")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_ANSWER_PREFIX = re.compile(r"(?:final\s+answer|answer)\s*[:=]\s*", re.IGNORECASE)
_SEPARATOR_LINE = re.compile(r"\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?")
_QUOTES = "'\"`"

# --- formatting gold rows -------------------------------------------------------------------------


def format_cell(value: object) -> str:
    """One gold cell as the model should write it: None and blank text -> NULL, bools -> 0/1, integral
    floats below 1e15 -> digits, other floats -> 10 significant digits (repr if that would round to inf),
    bytes -> UTF-8 text, text with its whitespace collapsed (so a cell never spans lines)."""
    if value is None:
        return "NULL"
    if isinstance(value, (bool, int)):
        return str(int(value))
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        compact = f"{value:.10g}"
        return compact if math.isinf(float(compact)) == math.isinf(value) else repr(value)
    text = " ".join(_gold_text(value).split())
    return text or "NULL"


def format_answer(rows: Sequence[Sequence[object]]) -> str:
    """Gold rows written exactly as prompt.ANSWER_FORMAT_HELP asks: NONE for no rows, a 1x1 result as the
    value, one column as `a, b, c` (one value per line if any value holds a comma), else `a | b` lines."""
    if not rows:
        return "NONE"
    cells = [[format_cell(value) for value in row] for row in rows]
    if len(cells[0]) == 1:
        values = [row[0] for row in cells]
        return ("\n" if any("," in value for value in values) else ", ").join(values)
    return "\n".join(" | ".join(row) for row in cells)


def _gold_text(value: object) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


# --- unwrapping what models put around an answer --------------------------------------------------


def strip_code_fence(text: str) -> str:
    """Accepts ```42```, ```\\n42\\n``` and ```text\\n42\\n``` (any one-word language tag) -> 42."""
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    inner = text[3:-3]
    first_line, newline, rest = inner.partition("\n")
    if newline and re.fullmatch(r"[\w+-]*", first_line.strip()):
        inner = rest
    return inner.strip()


def strip_answer_prefix(text: str) -> str:
    """Accepts `Answer: x`, `answer = x`, `Final answer: x` in any case -> x."""
    match = _ANSWER_PREFIX.match(text)
    return text[match.end():] if match else text


def strip_surrounding_quotes(text: str) -> str:
    """Accepts 'x', "x" and `x` -> x, only when that quote does not occur inside (so `"a", "b"` stays)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES and text[0] not in text[1:-1]:
        return text[1:-1].strip()
    return text


def strip_trailing_period(text: str) -> str:
    """Accepts `Paris.` -> Paris and `3.` -> 3; an ellipsis `...` is left alone."""
    return text[:-1].rstrip() if text.endswith(".") and not text.endswith("..") else text


def collapse_whitespace(text: str) -> str:
    """Accepts any spacing: runs of spaces/tabs become one space, lines are stripped, blank lines and
    Windows line ends are dropped; line breaks themselves are kept because they separate rows."""
    lines = (" ".join(line.split()) for line in text.replace("\r\n", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


UNWRAPPERS = (strip_code_fence, strip_answer_prefix, strip_surrounding_quotes, strip_trailing_period)


def unwrap_answer(text: str) -> str:
    """All the unwrappers above, repeated until nothing changes (so ```Answer: "x".``` -> x)."""
    previous = None
    text = text.strip()
    while text != previous:
        previous = text
        for unwrap in UNWRAPPERS:
            text = unwrap(text).strip()
    return collapse_whitespace(text)


# --- parsing an answer into candidate row sets ----------------------------------------------------


def split_table_row(line: str) -> list[str]:
    """Accepts `a | b` and markdown rows `| a | b |` (either outer pipe optional) -> ['a', 'b'].
    So `a |` is one cell: an empty cell must be written NULL, as format_cell does."""
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") else line
    return [cell.strip() for cell in line.split("|")]


def is_markdown_separator(line: str) -> bool:
    """True for a markdown header separator such as `---|---` or `| :--- | ---: |` (it needs a pipe)."""
    return "|" in line and _SEPARATOR_LINE.fullmatch(line.strip()) is not None


def table_candidates(text: str) -> Iterator[list[list[str]]]:
    """Rows as lines split on `|`: all lines; then, if there is a markdown separator line, without it;
    then, if it is the second line, without it and the header line above it."""
    lines = text.split("\n")
    yield [split_table_row(line) for line in lines]
    kept = [line for line in lines if not is_markdown_separator(line)]
    if len(kept) < len(lines):
        yield [split_table_row(line) for line in kept]
        if len(lines) > 1 and is_markdown_separator(lines[1]):
            yield [split_table_row(line) for line in kept[1:]]


def comma_candidates(text: str, num_rows: int, num_columns: int) -> Iterator[list[list[str]]]:
    """Comma-separated values (line breaks inside a value count as spaces): for one-column gold one value
    per row; for one-row gold one value per cell; for bigger tables without `|`, each line split on commas."""
    if num_columns == 1:
        yield [[value.strip()] for value in text.split(",")]
    elif num_rows == 1:
        yield [[value.strip() for value in text.split(",")]]
    elif "|" not in text:
        yield [[value.strip() for value in line.split(",")] for line in text.split("\n")]


def candidate_row_sets(text: str, num_rows: int, num_columns: int) -> Iterator[list[list[str]]]:
    """Every reading of an unwrapped answer that has the gold shape. For 1x1 gold, the whole string is one
    value (this is how `Smith, John` works), and a number with thousands separators (`1,234`) is read
    as that number here only; then the table readings; then the comma readings."""
    candidates: list[Iterator[list[list[str]]]] = []
    if num_rows == num_columns == 1:
        whole = [[[text]]]
        if _THOUSANDS.fullmatch(text):
            whole.append([[text.replace(",", "")]])
        candidates.append(iter(whole))
    candidates += [table_candidates(text), comma_candidates(text, num_rows, num_columns)]
    for family in candidates:
        for rows in family:
            if len(rows) == num_rows and all(len(row) == num_columns for row in rows):
                yield rows


# --- comparing one cell ---------------------------------------------------------------------------


def normalize_cell(text: str) -> str:
    """Accepts surrounding whitespace, one pair of surrounding quotes, a trailing period outside or inside
    them and runs of inner whitespace: `  "New   York". ` -> New York. Used on predicted and gold text."""
    text = strip_trailing_period(text.strip())
    if text and text[0] in _QUOTES:
        text = strip_trailing_period(strip_surrounding_quotes(text))
    return " ".join(text.split())


def parse_float(text: str) -> float | None:
    """Accepts plain decimal numbers: 42, -3.5, .5, 1e-3, inf; not 1,234 or 1_000 or nan (-> None)."""
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def cell_key(text: str) -> tuple:
    """The exact identity of a predicted cell: ('null',) for empty/NULL/None/null in any case; ('num', n)
    for integers, also written 42.0 or 4.2e1; else ('text', casefolded normalized text)."""
    return _normalized_key(normalize_cell(text))


def _normalized_key(text: str) -> tuple:
    folded = text.casefold()
    if folded in NULL_WORDS:
        return ("null",)
    if not (text[0].isdigit() or text[0] in "+-."):  # cannot be an integer: skip the parsing
        return ("text", folded)
    if _INTEGER.fullmatch(text):
        try:
            return ("num", int(text))
        except ValueError:  # more digits than int() allows
            pass
    number = parse_float(text)
    if number is not None and math.isfinite(number) and number.is_integer():
        return ("num", int(number))
    return ("text", folded)


def gold_key(value: object) -> tuple | None:
    """The exact identity of a gold cell, comparable with cell_key; None when the cell needs a tolerant
    match: floats, and text that reads as a non-integer number ('3.5', '1e3'). Ints, bools and integer
    text ('1990') match integers exactly; other text matches case-insensitively after normalize_cell;
    text that is blank, 'NULL' or 'None' matches NULL like None does."""
    if value is None:
        return ("null",)
    if isinstance(value, int):  # bools too
        return ("num", int(value))
    if isinstance(value, float):
        return None
    text = normalize_cell(_gold_text(value))
    if not _INTEGER.fullmatch(text) and parse_float(text) is not None:
        return None
    return _normalized_key(text)


def gold_number(value: object) -> float:
    """The number of a gold cell whose gold_key is None."""
    return value if isinstance(value, float) else float(normalize_cell(_gold_text(value)))


def numbers_close(predicted: float, gold: float) -> bool:
    """Within 1% of the larger magnitude, or within 1e-6 near zero; inf matches only the same inf."""
    return math.isclose(predicted, gold, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE)


def cell_matches(predicted: str, gold: object) -> bool:
    """One predicted cell against one gold cell, by the gold cell's type (see gold_key)."""
    key = gold_key(gold)
    if key is not None:
        return cell_key(predicted) == key
    number = parse_float(normalize_cell(predicted))
    return number is not None and numbers_close(number, gold_number(gold))


# --- comparing rows -------------------------------------------------------------------------------


def rows_match_ordered(predicted: list[list[str]], gold: Sequence[Sequence[object]]) -> bool:
    """Row i against row i, cell by cell (used when the gold query has ORDER BY)."""
    return all(cell_matches(cell, value) for row, gold_row in zip(predicted, gold)
               for cell, value in zip(row, gold_row))


def rows_match_unordered(predicted: list[list[str]], gold: Sequence[Sequence[object]]) -> bool:
    """Rows as bags, as Spider compares them, in O(n) unless float cells need tolerance. Accepts at once
    when the bag of row keys equals the gold rows' keys with floats as format_cell prints them. Else
    rows whose gold cells all have exact keys are counted off by key (greedy is safe: equal keys match
    the same gold cells) and the rest, rows with a float cell, go to _match_tolerant_rows."""
    cells = [[normalize_cell(cell) for cell in row] for row in predicted]
    keys = [tuple(map(_normalized_key, row)) for row in cells]
    gold_keys = [tuple(map(gold_key, row)) for row in gold]
    printed = (tuple(k if k is not None else cell_key(format_cell(v)) for k, v in zip(row_keys, row))
               for row_keys, row in zip(gold_keys, gold))
    if Counter(keys) == Counter(printed):
        return True
    remaining = Counter(row_keys for row_keys in gold_keys if None not in row_keys)
    tolerant_gold = [(row_keys, row) for row_keys, row in zip(gold_keys, gold) if None in row_keys]
    leftover = []
    for row_keys, row in zip(keys, cells):
        if remaining[row_keys] > 0:
            remaining[row_keys] -= 1
        else:
            leftover.append((row_keys, row))
    return len(leftover) == len(tolerant_gold) and _match_tolerant_rows(leftover, tolerant_gold)


def _match_tolerant_rows(predicted: list, gold: list) -> bool:
    """Predicted rows as (keys, normalized cells); gold rows as (keys, cells), each with a float cell
    (key None). Gold rows are bucketed by which cells are floats and by the keys of the others; a
    predicted row goes to every bucket its keys and numbers fit (one, unless a column mixes ints and
    floats). When each row fits one bucket, buckets are matched by sorting both sides: exact for one
    float column (the interval of values close to x moves up with x), a shortcut for several; what is
    left is decided by _has_perfect_matching."""
    buckets: dict[tuple, list[tuple[float, ...]]] = defaultdict(list)
    for keys, row in gold:
        mask = tuple(key is None for key in keys)
        exact = tuple(key for key in keys if key is not None)
        buckets[mask, exact].append(tuple(gold_number(v) for v, k in zip(row, keys) if k is None))
    masks = {mask for mask, _ in buckets}
    routes = []  # per predicted row: each (bucket, float cells) it could belong to
    for keys, cells in predicted:
        row_routes = []
        for mask in masks:
            bucket = (mask, tuple([key for key, is_float in zip(keys, mask) if not is_float]))
            numbers = tuple([parse_float(cell) for cell, is_float in zip(cells, mask) if is_float])
            if bucket in buckets and None not in numbers:
                row_routes.append((bucket, numbers))
        if not row_routes:
            return False
        routes.append(tuple(row_routes))
    if all(len(row_routes) == 1 for row_routes in routes):
        routed = defaultdict(list)
        for [(bucket, numbers)] in routes:
            routed[bucket].append(numbers)
        if any(len(routed[bucket]) != len(values) for bucket, values in buckets.items()):
            return False
        unsorted = [bucket for bucket, values in buckets.items()
                    if not _sorted_pairs_close(routed[bucket], values)]
        if not unsorted or any(sum(mask) == 1 for mask, _ in unsorted):
            return not unsorted
    return _has_perfect_matching(routes, buckets)


def _sorted_pairs_close(predicted: list[tuple[float, ...]], gold: list[tuple[float, ...]]) -> bool:
    """Pairs the i-th smallest rows; several floats sort as printed by format_cell, so ties agree."""
    key = None if len(gold[0]) == 1 else _printed
    pairs = zip(sorted(predicted, key=key), sorted(gold, key=key))
    return all(all(map(numbers_close, p, g)) for p, g in pairs)


def _printed(numbers: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(float(f"{number:.10g}") for number in numbers)


def _has_perfect_matching(routes: list, buckets: dict) -> bool:
    """Kuhn's augmenting paths from predicted rows to groups of equal gold rows (a group takes as many
    rows as it stands for). A row first takes a free group that prints like it (what a correct answer
    hits, in O(1)); a row that misses, or must make room, lists its options: the groups of its buckets
    whose floats are all close (found by bisection on the first), closest first. This is quadratic
    only when thousands of rows that do not print like the gold lie within 1% of each other."""
    capacity, values_of, firsts, offsets, printed = [], [], {}, {}, defaultdict(list)
    for bucket, gold_values in buckets.items():
        counts = Counter(gold_values)
        offsets[bucket], firsts[bucket] = len(capacity), [values[0] for values in sorted(counts)]
        for values in sorted(counts):
            printed[bucket, _printed(values)].append(len(capacity))
            capacity.append(counts[values])
            values_of.append(values)
    known: dict[int, list[int]] = {}

    def options(row: int) -> list[int]:
        if row not in known:
            scored = []
            for bucket, numbers in routes[row]:
                low, high = _window(numbers[0])
                for j in range(bisect_left(firsts[bucket], low), bisect_right(firsts[bucket], high)):
                    group = offsets[bucket] + j
                    if all(map(numbers_close, numbers, values_of[group])):
                        scored.append((sum(abs(p - g) for p, g in zip(numbers, values_of[group])), group))
            known[row] = [group for _, group in sorted(scored)]
        return known[row]

    holders: list[set[int]] = [set() for _ in capacity]  # group -> predicted rows placed in it
    for row, row_routes in enumerate(routes):
        alike = [(group, numbers) for bucket, numbers in row_routes
                 for group in printed.get((bucket, _printed(numbers)), [])]
        free = next((group for group, numbers in alike if len(holders[group]) < capacity[group]
                     and all(map(numbers_close, numbers, values_of[group]))), None)
        if free is not None:
            holders[free].add(row)
        elif not _augment(row, options, capacity, holders):
            return False
    return True


def _window(number: float) -> tuple[float, float]:
    """A range surely holding every value close to `number` (a little wider than needed)."""
    if math.isinf(number):
        return number, number
    margin = 1.01 * max(abs(number) * RELATIVE_TOLERANCE / (1 - RELATIVE_TOLERANCE), ABSOLUTE_TOLERANCE)
    return number - margin, number + margin


def _augment(start: int, options, capacity: list[int], holders: list[set[int]]) -> bool:
    """Places predicted row `start`, moving placed rows along one alternating path if needed."""
    free = next((group for group in options(start) if len(holders[group]) < capacity[group]), None)
    if free is not None:
        holders[free].add(start)
        return True
    visited: set[int] = set()
    stack = [(start, iter(options(start)))]  # alternates: (row, its groups), (group, its rows)
    while stack:
        step = next(stack[-1][1], None)
        if step is None:
            stack.pop()
        elif len(stack) % 2 == 0:  # a row placed in the group on top: try moving it elsewhere
            stack.append((step, iter(options(step))))
        elif step not in visited:
            visited.add(step)
            if len(holders[step]) < capacity[step]:
                rows = [row for row, _ in stack[::2]]
                groups = [group for group, _ in stack[1::2]] + [step]
                for row, old_group in zip(rows[1:], groups):
                    holders[old_group].discard(row)
                for row, group in zip(rows, groups):
                    holders[group].add(row)
                return True
            stack.append((step, iter(list(holders[step]))))
    return False


# --- the verifier ---------------------------------------------------------------------------------


def matches_exact_text(predicted: object, gold_rows: Sequence[Sequence[object]]) -> bool:
    """What a verifier without this module's relaxations accepts: the answer's text, surrounding whitespace
    stripped, equal to format_answer(gold_rows), the format prompt.ANSWER_FORMAT_HELP asks for (so also the
    gold rows' order). No reward uses it: it measures how many right answers only the relaxed reading accepts."""
    text = predicted if isinstance(predicted, str) else str(predicted)
    return text.strip() == format_answer(gold_rows)


def verify_answer(predicted: str, gold_rows: Sequence[Sequence[object]], ordered: bool = False) -> bool:
    """True when `predicted` states exactly the gold result. The answer is read twice, as written (only
    whitespace collapsed, so gold text like `Answer: x` still matches) and unwrapped; each reading is
    parsed by candidate_row_sets, and any candidate matching the gold rows (row and column counts equal,
    rows as a bag unless `ordered`) accepts. Empty gold accepts NONE, NULL, empty, `no rows`/`no results`.
    A non-string answer (a tool call may pass a JSON number) is read as str(predicted)."""
    predicted = predicted if isinstance(predicted, str) else str(predicted)
    readings = dict.fromkeys([collapse_whitespace(predicted), unwrap_answer(predicted)])
    if not gold_rows:
        return any(reading.casefold() in NO_ROWS_WORDS for reading in readings)
    rows_match = rows_match_ordered if ordered else rows_match_unordered
    num_rows, num_columns = len(gold_rows), len(gold_rows[0])
    return any(rows_match(candidate, gold_rows)
               for reading in readings
               for candidate in candidate_row_sets(reading, num_rows, num_columns))
