"""The curriculum: which phases train in which order, on which hardness classes, for how many epochs.

    phases = load_curriculum("curriculum.yaml")          # checked: known hardness names, epochs > 0, earlier start_from
    phase, epochs_before = select_phase(phases, "mixed")   # and the curriculum epochs trained before it

The file (curriculum.yaml by default, ``train.py --curriculum``) is the place to change the curriculum; a phase's
``start_from`` names the earlier phase whose adapter it continues, and the epochs before a phase decide when the
few-shot examples retire (fewshot.py). A phase's optional ``learning_rate`` replaces ``--learning_rate``'s default
for that phase (a ``--learning_rate`` the user gives wins).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from spider_data import hardness_names


@dataclass(frozen=True)
class Phase:
    name: str
    hardness: tuple[str, ...]
    epochs: float
    start_from: str | None = None
    learning_rate: float | None = None  # None: --learning_rate's default


def load_curriculum(path: str | Path) -> list[Phase]:
    """The phases of a curriculum file, checked: known hardness names, positive epochs, earlier start_from."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"curriculum file not found: {path}")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML ({error})") from None
    entries = document.get("phases") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: expected a 'phases:' list")
    phases: list[Phase] = []
    for number, entry in enumerate(entries, start=1):
        phase = _parse_phase(entry, f"{path}: phase {number}")
        if phase.name in [earlier.name for earlier in phases]:
            raise ValueError(f"{path}: two phases are named {phase.name!r}")
        if phase.start_from is not None and phase.start_from not in [earlier.name for earlier in phases]:
            raise ValueError(f"{path}: phase {phase.name!r} starts from {phase.start_from!r}, not an earlier phase")
        phases.append(phase)
    return phases


def _parse_phase(entry: object, where: str) -> Phase:
    """One ``phases:`` entry as a Phase; ValueError saying which field is missing or wrong."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping with name, hardness and epochs, got {entry!r}")
    missing = [key for key in ("name", "hardness", "epochs") if key not in entry]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    hardness = entry["hardness"]
    if not isinstance(hardness, list) or not hardness:
        raise ValueError(f"{where}: hardness must be a list such as [easy, medium], got {hardness!r}")
    try:
        names = tuple(hardness_names(hardness))  # Spider's order, whatever order the file lists them in
    except ValueError as error:
        raise ValueError(f"{where} ({entry['name']!r}): {error}") from None
    epochs = entry["epochs"]
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float)) or epochs <= 0:
        raise ValueError(f"{where} ({entry['name']!r}): epochs must be a number above 0, got {epochs!r}")
    start_from = entry.get("start_from")
    return Phase(name=str(entry["name"]), hardness=names, epochs=float(epochs),
                 start_from=None if start_from is None else str(start_from),
                 learning_rate=_learning_rate(entry.get("learning_rate"), f"{where} ({entry['name']!r})"))


def _learning_rate(value: object, where: str) -> float | None:
    """A phase's learning rate as a float (YAML reads ``5e-5``, without a dot, as text), or None where unset."""
    if value is None:
        return None
    rate = None
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            rate = float(value)
        except ValueError:
            pass
    if rate is None or not 0 < rate < float("inf"):
        raise ValueError(f"{where}: learning_rate must be a number above 0 such as 5e-5, got {value!r}")
    return rate


def select_phase(phases: list[Phase], name: str) -> tuple[Phase, float]:
    """The phase and the number of curriculum epochs that come before it."""
    names = [phase.name for phase in phases]
    if name not in names:
        raise ValueError(f"unknown --phase {name!r}; the curriculum has: {', '.join(names)}")
    index = names.index(name)
    return phases[index], sum(phase.epochs for phase in phases[:index])
