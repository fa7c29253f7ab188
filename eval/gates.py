"""The accuracy gates: reviewed thresholds (gates.toml) read into checks on a report's numbers.

    gates = load_gates()                         # eval/gates.toml
    [gate for gate in gates if not gate.passes(report["by_hardness"])]

Each table of gates.toml is a metric with a comparison; each key a hardness class (or overall).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.metrics import GROUPS

GATES_FILE = Path(__file__).resolve().parent / "gates.toml"
# table name -> (report metric, True when the value must be strictly above the bound, else at most it)
TABLES = {
    "accuracy_above": ("accuracy", True),
    "mean_steps_at_most": ("mean_steps", False),
    "post_episode_calls_at_most": ("post_episode_calls", False),
}


@dataclass(frozen=True)
class Gate:
    """One threshold on one number of report.json's by_hardness."""

    metric: str
    group: str
    bound: float
    must_exceed: bool

    def __str__(self) -> str:
        return f"{self.group} {self.metric} {'>' if self.must_exceed else '<='} {self.bound:g}"

    def value(self, by_hardness: dict[str, dict[str, Any]]) -> float | None:
        """The gated number, or None when the group had no questions."""
        return by_hardness[self.group][self.metric]

    def passes(self, by_hardness: dict[str, dict[str, Any]]) -> bool:
        value = self.value(by_hardness)
        if value is None:
            raise ValueError(f"cannot check {self}: the report has no {self.group} questions")
        return value > self.bound if self.must_exceed else value <= self.bound


def parse_gates(tables: dict[str, Any], source: str = "gates") -> list[Gate]:
    """Gates from gates.toml's tables; a misspelt table or group is an error naming the valid ones."""
    gates = []
    for table, bounds in tables.items():
        if table not in TABLES:
            raise ValueError(f"{source}: unknown table [{table}]; tables are: {', '.join(TABLES)}")
        metric, must_exceed = TABLES[table]
        for group, bound in bounds.items():
            if group not in GROUPS:
                raise ValueError(f"{source}: [{table}] {group} is not one of {', '.join(GROUPS)}")
            if isinstance(bound, bool) or not isinstance(bound, int | float):
                raise ValueError(f"{source}: [{table}] {group} must be a number, got {bound!r}")
            gates.append(Gate(metric=metric, group=group, bound=float(bound), must_exceed=must_exceed))
    return gates


def load_gates(path: Path = GATES_FILE) -> list[Gate]:
    with path.open("rb") as file:
        return parse_gates(tomllib.load(file), source=str(path))
