"""The curriculum: which phases train in which order, on which hardness classes, for how many epochs.

    phases = load_curriculum("curriculum.yaml")          # checked: known hardness names, epochs > 0, earlier start_from
    phase, epochs_before = select_phase(phases, "mixed")   # and the curriculum epochs trained before it

The file (curriculum.yaml by default, ``train.py --curriculum``) is the place to change the curriculum; a phase's
``start_from`` names the earlier phase whose adapter it continues, and the epochs before a phase decide when the
few-shot examples retire (fewshot.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Phase:
    name: str
    hardness: tuple[str, ...]
    epochs: float
    start_from: str | None = None


def load_curriculum(path: str | Path) -> list[Phase]:
    """The phases of a curriculum file, checked: known hardness names, positive epochs, earlier start_from."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"curriculum file not found: {path}")
    entries = (yaml.safe_load(path.read_text()) or {}).get("phases")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: expected a 'phases:' list")
    phases: list[Phase] = []
    for entry in entries:
        phase = Phase(name=str(entry["name"]), hardness=tuple(entry["hardness"]), epochs=float(entry["epochs"]),
                      start_from=entry.get("start_from"))
        unknown = set(phase.hardness) - {"easy", "medium", "hard", "extra"}
        if unknown or phase.epochs <= 0:
            raise ValueError(f"{path}: phase {phase.name!r} has unknown hardness {sorted(unknown)} or epochs <= 0")
        if phase.start_from is not None and phase.start_from not in [earlier.name for earlier in phases]:
            raise ValueError(f"{path}: phase {phase.name!r} starts from {phase.start_from!r}, not an earlier phase")
        phases.append(phase)
    return phases


def select_phase(phases: list[Phase], name: str) -> tuple[Phase, float]:
    """The phase and the number of curriculum epochs that come before it."""
    names = [phase.name for phase in phases]
    if name not in names:
        raise ValueError(f"unknown --phase {name!r}; the curriculum has: {', '.join(names)}")
    index = names.index(name)
    return phases[index], sum(phase.epochs for phase in phases[:index])
