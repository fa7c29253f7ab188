"""Structural facts about a gold SQL query: Spider hardness, whether its result is ordered, and
which tables it reads.

Everything is read from a sqlglot parse tree (SQLite dialect first), never from regexes over the
text, so quoting, casing and whitespace in Spider's gold SQL cannot fool it.

Hardness reproduces the official Spider evaluation (`evaluation.py` in taoyds/spider:
`eval_hardness`, `count_component1`, `count_component2`, `count_others`, `count_agg`, `has_agg`,
`get_nestedSQL`). That code reads the parsed-SQL dicts of `process_sql.py`, where a WHERE or
HAVING clause is a flat list ``[cond_unit, 'and'/'or', cond_unit, ...]`` and a cond_unit is
``(not_op, op_id, val_unit, val1, val2)``. `SpiderClauses` rebuilds those facts from sqlglot's
tree, quirks included, because the goal is numeric agreement with the published class counts
(on Spider's train split it agrees with the official code on all 6,999 queries that code parses).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

# SQLite first; the others only rescue text that sqlglot's SQLite grammar rejects.
DIALECTS: tuple[str, ...] = ("sqlite", "", "mysql")
# Spider's AGG_OPS (less 'none'): only these five count as aggregates.
AGGREGATES: tuple[type[exp.Expression], ...] = (exp.Max, exp.Min, exp.Count, exp.Sum, exp.Avg)
# Spider's UNIT_OPS: a val_unit is one col_unit, or two joined by one of these.
ARITHMETIC: tuple[type[exp.Expression], ...] = (exp.Add, exp.Sub, exp.Mul, exp.Div)


class SQLStructureError(ValueError):
    """The SQL text could not be parsed into a single query."""


class Hardness(str, Enum):
    """Spider's official difficulty classes."""

    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    EXTRA = "extra"


class Connector(str, Enum):
    """The words that join conditions in Spider's flat condition lists."""

    AND = "and"
    OR = "or"


@dataclass(frozen=True)
class Condition:
    """A WHERE/HAVING/ON clause as Spider lists it: cond_units left to right and the connectors
    between them (one fewer), with no operator precedence and no parentheses."""

    units: tuple[exp.Expression, ...] = ()
    connectors: tuple[Connector, ...] = ()

    def __add__(self, other: Condition) -> Condition:
        """Concatenate, joining with AND when both sides are non-empty."""
        if not self.units or not other.units:
            return self if self.units else other
        return Condition(self.units + other.units, self.connectors + (Connector.AND,) + other.connectors)


@dataclass(frozen=True)
class ComponentCounts:
    """The three numbers `eval_hardness` compares against its thresholds."""

    component1: int
    component2: int
    others: int


# --- parsing -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _parse_query(sql: str) -> exp.Query:
    """Parse one query, trying each dialect in DIALECTS in turn.

    Cached because the verifier asks about the same gold SQL again and again; this module only
    reads the tree, never modifies it.
    """
    first_error = ""
    for dialect in DIALECTS:
        try:
            statements = [s for s in sqlglot.parse(sql, read=dialect or None) if s is not None]
        except SqlglotError as error:
            first_error = first_error or str(error).splitlines()[0]
            continue
        if len(statements) != 1 or not isinstance(statements[0], exp.Query):
            kinds = [type(statement).__name__ for statement in statements]
            raise SQLStructureError(f"expected exactly one SELECT query, got {kinds or 'nothing'}: {sql!r}")
        return statements[0]
    raise SQLStructureError(f"cannot parse SQL {sql!r}: {first_error}")


def _unwrap(node: exp.Expression | None) -> exp.Expression | None:
    """Strip aliases and redundant parentheses, which Spider's structure does not record."""
    while isinstance(node, (exp.Alias, exp.Paren)):
        node = node.this
    return node


# --- Spider's view of one condition ----------------------------------------------------------


def _flatten(node: exp.Expression | None) -> Condition:
    """Flatten an AND/OR tree (through parentheses) into a left-to-right condition list."""
    node = _unwrap(node)
    if node is None:
        return Condition()
    if not isinstance(node, (exp.And, exp.Or)):
        return Condition(units=(node,))
    left, right = _flatten(node.this), _flatten(node.expression)
    connector = Connector.AND if isinstance(node, exp.And) else Connector.OR
    return Condition(left.units + right.units, left.connectors + (connector,) + right.connectors)


def _is_negated(unit: exp.Expression) -> bool:
    """A cond_unit's not_op: NOT IN / NOT LIKE / NOT BETWEEN, which sqlglot writes as Not(...)
    or negate=True. `!=` is an operator of its own, not a negation."""
    return isinstance(unit, exp.Not) or bool(unit.args.get("negate"))


def _comparison(unit: exp.Expression) -> exp.Expression:
    """The comparison inside a cond_unit, its NOT stripped."""
    return _unwrap(unit.this) if isinstance(unit, exp.Not) else unit


def _is_like(unit: exp.Expression) -> bool:
    """Whether a cond_unit's op_id is Spider's 'like' (negated or not)."""
    return isinstance(_comparison(unit), (exp.Like, exp.ILike))


def _values(unit: exp.Expression) -> list[exp.Expression | None]:
    """A cond_unit's val1/val2: a BETWEEN's bounds, an IN's subquery, else the right-hand side.
    (An IN list has no value Spider can read; it is reported as None.)"""
    comparison = _comparison(unit)
    if isinstance(comparison, exp.Between):
        return [comparison.args.get("low"), comparison.args.get("high")]
    if isinstance(comparison, exp.In):
        return [comparison.args.get("query")]
    return [comparison.args.get("expression")]


def _is_nested_query(value: exp.Expression | None) -> bool:
    """Whether a value is a nested query (a dict in Spider's parse)."""
    return isinstance(_unwrap(value), (exp.Subquery, exp.Query))


def _is_column_value(value: exp.Expression | None) -> bool:
    """Whether `process_sql.parse_value` reads a value as a column: it is not a string, number
    or nested query. Spider writes strings in double quotes, which SQLite's grammar reads as a
    quoted identifier, so an unqualified quoted "column" counts as a string here."""
    value = _unwrap(value)
    if isinstance(value, exp.Neg):
        value = _unwrap(value.this)
    if isinstance(value, exp.Column) and not value.table and isinstance(value.this, exp.Identifier):
        return not value.this.quoted
    return not (value is None or isinstance(value, (exp.Literal, exp.Null)) or _is_nested_query(value))


def _swallow_after_column_values(condition: Condition) -> Condition:
    """Reproduce `parse_value`'s quirk: it reads a column value by skipping tokens up to the next
    ',', ')', 'and', clause or join keyword, and 'or' is not one of them, so in
    ``a < b OR c > d`` the OR and every OR-joined condition after it vanish from Spider's parse."""
    if not condition.units:
        return condition
    units, connectors = [condition.units[0]], []
    swallowing = _is_column_value(_values(units[0])[-1])
    for connector, unit in zip(condition.connectors, condition.units[1:]):
        if swallowing and connector is Connector.OR:
            continue
        units.append(unit)
        connectors.append(connector)
        swallowing = _is_column_value(_values(unit)[-1])
    return Condition(tuple(units), tuple(connectors))


def _spider_condition(node: exp.Expression | None) -> Condition:
    """A condition as `process_sql.parse_condition` would list it."""
    return _swallow_after_column_values(_flatten(node))


# --- Spider's view of one select -------------------------------------------------------------


def _is_aggregate(node: exp.Expression | None) -> bool:
    """Spider's agg_id != none for a select item or col_unit: its outermost function is one of
    max/min/count/sum/avg."""
    return isinstance(_unwrap(node), AGGREGATES)


def _order_aggregate_count(ordered: exp.Expression) -> int:
    """Aggregates in one ORDER BY val_unit, counted per col_unit as `count_others` does
    (``ORDER BY sum(a) + sum(b)`` counts two)."""
    expression = _unwrap(ordered.this if isinstance(ordered, exp.Ordered) else ordered)
    if isinstance(expression, ARITHMETIC):
        return int(_is_aggregate(expression.this)) + int(_is_aggregate(expression.expression))
    return int(_is_aggregate(expression))


@dataclass(frozen=True)
class SpiderClauses:
    """The top-level select of a query as `process_sql.get_sql` stores it.

    `process_sql` parses ``A UNION B UNION C`` as A with ``union = (B UNION C)``, so only A's own
    clauses count; sqlglot nests set operations to the left, so A is the leftmost select. An
    ORDER BY/LIMIT written after the last select (sqlglot hangs it on the set operation) belongs,
    for Spider, to the nested query, so it is not A's.
    """

    select_items: tuple[exp.Expression, ...]
    table_units: int
    from_conditions: Condition
    where: Condition
    group_by: tuple[exp.Expression, ...]
    having: Condition
    order_by: tuple[exp.Expression, ...]
    has_limit: bool
    has_set_operation: bool

    @classmethod
    def from_query(cls, query: exp.Expression) -> SpiderClauses:
        """Find the top-level select and read its clauses."""
        has_set_operation, node = False, _unwrap(query)
        while isinstance(node, (exp.SetOperation, exp.Subquery)):
            has_set_operation = has_set_operation or isinstance(node, exp.SetOperation)
            node = _unwrap(node.this)
        if not isinstance(node, exp.Select):
            raise SQLStructureError(f"expected a SELECT, got {type(node).__name__}")
        joins = node.args.get("joins") or []
        where, group, having, order = (node.args.get(key) for key in ("where", "group", "having", "order"))
        return cls(
            select_items=tuple(node.expressions),
            # Spider's table_units: every table or FROM-subquery in FROM and its JOINs.
            table_units=int(node.args.get("from_") is not None) + len(joins),
            # `parse_from` concatenates the ON conditions of all JOINs with 'and'.
            from_conditions=sum((_spider_condition(join.args.get("on")) for join in joins), Condition()),
            where=_spider_condition(where.this if where else None),
            group_by=tuple(group.expressions if group else ()),
            having=_spider_condition(having.this if having else None),
            order_by=tuple(order.expressions if order else ()),
            has_limit=node.args.get("limit") is not None,
            has_set_operation=has_set_operation,
        )

    @property
    def cond_units(self) -> list[exp.Expression]:
        """All cond_units of ON, WHERE and HAVING, the set several official rules scan."""
        return [*self.from_conditions.units, *self.where.units, *self.having.units]


# --- the official rules --------------------------------------------------------------------


def count_component1(clauses: SpiderClauses) -> int:
    """Mirrors `count_component1`: one each for WHERE, GROUP BY, ORDER BY and LIMIT; one per
    JOIN (table units minus one, so a FROM-subquery is a join partner, not a nested query); one
    per OR and one per LIKE (negated too) across ON, WHERE and HAVING."""
    clause_count = sum(map(bool, (clauses.where.units, clauses.group_by, clauses.order_by, clauses.has_limit)))
    conditions = (clauses.from_conditions, clauses.where, clauses.having)
    or_count = sum(condition.connectors.count(Connector.OR) for condition in conditions)
    like_count = sum(map(_is_like, clauses.cond_units))
    return clause_count + max(clauses.table_units - 1, 0) + or_count + like_count


def count_component2(clauses: SpiderClauses) -> int:
    """Mirrors `count_component2` (= len(`get_nestedSQL`)): nested queries among the values of
    ON/WHERE/HAVING cond_units, plus one for an INTERSECT/UNION/EXCEPT after the select.
    FROM-subqueries do not count (they are table units)."""
    nested = sum(_is_nested_query(value) for unit in clauses.cond_units for value in _values(unit))
    return nested + int(clauses.has_set_operation)


def count_aggregates(clauses: SpiderClauses) -> int:
    """Mirrors the aggregate tally in `count_others`, quirks and all.

    `has_agg(unit)` tests ``unit[0] != 0``, so what counts depends on what element 0 is:
    SELECT items and GROUP BY col_units (agg_id): real aggregates. WHERE cond_units (not_op): a
    negated condition counts and a real aggregate does not. ORDER BY: each col_unit of each
    val_unit. HAVING: the whole list goes in, so every 'and'/'or' string counts, and cond_units
    only when negated.
    """
    return (
        sum(map(_is_aggregate, clauses.select_items))
        + sum(map(_is_negated, clauses.where.units))
        + sum(map(_is_aggregate, clauses.group_by))
        + sum(map(_order_aggregate_count, clauses.order_by))
        + len(clauses.having.connectors)
        + sum(map(_is_negated, clauses.having.units))
    )


def count_others(clauses: SpiderClauses) -> int:
    """Mirrors `count_others`: one each for more than one aggregate, more than one SELECT item,
    ``len(sql['where']) > 1`` (two or more WHERE conditions) and more than one GROUP BY key."""
    return (
        int(count_aggregates(clauses) > 1)
        + int(len(clauses.select_items) > 1)
        + int(len(clauses.where.units) > 1)
        + int(len(clauses.group_by) > 1)
    )


def count_components(sql: str) -> ComponentCounts:
    """The component counts of the query's top-level select, as `eval_hardness` computes them.

    Raises:
        SQLStructureError: the text is not a single parseable query.
    """
    clauses = SpiderClauses.from_query(_parse_query(sql))
    return ComponentCounts(count_component1(clauses), count_component2(clauses), count_others(clauses))


def hardness_from_counts(counts: ComponentCounts) -> Hardness:
    """Mirrors `Evaluator.eval_hardness`'s thresholds exactly."""
    c1, c2, others = counts.component1, counts.component2, counts.others
    if c1 <= 1 and others == 0 and c2 == 0:
        return Hardness.EASY
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return Hardness.MEDIUM
    if (
        (others > 2 and c1 <= 2 and c2 == 0)
        or (2 < c1 <= 3 and others <= 2 and c2 == 0)
        or (c1 <= 1 and others == 0 and c2 <= 1)
    ):
        return Hardness.HARD
    return Hardness.EXTRA


def classify_hardness(sql: str) -> Hardness:
    """Spider's official hardness class of a SQL query.

    Raises:
        SQLStructureError: the text is not a single parseable query.
    """
    return hardness_from_counts(count_components(sql))


# --- order and tables ----------------------------------------------------------------------


def orders_result(sql: str) -> bool:
    """Whether the query's result order is defined by a top-level ORDER BY.

    For a compound query that is the ORDER BY after the last select, which orders the whole
    compound; ORDER BYs inside subqueries or inside one arm of a compound do not.

    Raises:
        SQLStructureError: the text is not a single parseable query.
    """
    node = _unwrap(_parse_query(sql))
    while isinstance(node, exp.Subquery) and node.args.get("order") is None:
        node = _unwrap(node.this)  # a fully parenthesised query is ordered as its inside is
    return node is not None and node.args.get("order") is not None


def _source_position(table: exp.Table) -> int:
    """Where a table name starts in the SQL text, so results follow reading order."""
    return table.this.meta.get("start", 0) if isinstance(table.this, exp.Identifier) else 0


def _tables_read(sql: str) -> list[exp.Table]:
    """The table nodes of a query that name real tables (CTE references left out), in reading order."""
    tree = _parse_query(sql)
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return [table for table in sorted(tree.find_all(exp.Table), key=_source_position)
            if table.name and not (table.name.lower() in cte_names and not table.db)]


def tables_used(sql: str) -> list[str]:
    """The real tables a query reads, in order of first appearance, spelled as written.

    Aliases are never reported, and neither are references to CTEs. Duplicates are dropped
    case-insensitively, as SQLite compares table names, keeping the first spelling.

    Raises:
        SQLStructureError: the text is not a single parseable query.
    """
    names: dict[str, str] = {}
    for table in _tables_read(sql):
        names.setdefault(table.name.lower(), table.name)
    return list(names.values())


def table_references(sql: str) -> dict[str, str]:
    """How a query names each real table it reads: the name a column is qualified by there (the alias, or the table's
    own name where it has none) to the table, both as written, in order of first appearance; an alias that a subquery
    reuses for another table names the first. CTE references are left out.

    Raises:
        SQLStructureError: the text is not a single parseable query.
    """
    references: dict[str, str] = {}
    for table in _tables_read(sql):
        references.setdefault(table.alias_or_name, table.name)
    return references
