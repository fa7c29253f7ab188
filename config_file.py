"""A ``--config`` YAML file: the settings it gives, and its mistakes said in one line.

    check_config_file(parser, argv, (AgentConfig, AgentGRPOConfig))   # before TrlParser reads the file
    explicit = config_file_keys(argv)                                   # its keys count as the user's choices
    settings = config_file_settings(argv)                               # its values, by flag name

TrlParser reads ``--config`` itself; an unknown key there ends in a hint meant for programmers and a wrong value in
the whole usage text, so the file is checked first, against the parser's own flags and the settings' declared types.
"""

from __future__ import annotations

import argparse
import difflib
import typing
from pathlib import Path
from typing import Any

import yaml


def check_config_file(parser: argparse.ArgumentParser, argv: list[str], settings: tuple[type, ...]) -> None:
    """A --config file's unknown key or wrong value, in one line naming the file, the key and what it accepts
    (TrlParser would end the first in a hint meant for programmers, the second in the whole usage text)."""
    if "--config" not in argv or argv.index("--config") + 1 >= len(argv):
        return
    path = Path(argv[argv.index("--config") + 1])
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise FileNotFoundError(f"--config {path}: cannot read it ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or error
        raise ValueError(f"--config {path}: not valid YAML{where}: {problem}") from None
    if config is None:
        return
    if not isinstance(config, dict):
        raise ValueError(f"--config {path}: expected `flag: value` lines (a YAML mapping), "
                         f"got a {type(config).__name__}")
    actions: dict[str, argparse.Action] = {}
    for action in parser._actions:  # a yes/no flag's --no_ twin shares its dest: keep the flag itself
        actions.setdefault(action.dest, action)
    actions.pop("help", None), actions.pop("config", None)
    declared = {name: kind for cls in reversed(settings) for name, kind in typing.get_type_hints(cls).items()}
    for key, value in config.items():
        if key == "env":  # TrlParser's own: environment variables to set
            continue
        if key not in actions:
            close = difflib.get_close_matches(str(key).replace("-", "_"), actions, n=1)
            raise ValueError(f"--config {path}: unknown key {key!r}{f' (did you mean {close[0]}?)' if close else ''}; "
                             "keys are the flags of `python train.py --help`, written with underscores")
        problem = config_value_problem(actions[key], declared.get(key), value)
        if problem:
            raise ValueError(f"--config {path}: {key}: {problem}")


TRUTH_WORDS = ("true", "false", "yes", "no", "t", "f", "y", "n", "1", "0")  # what a yes/no flag takes, any case


def config_value_problem(action: argparse.Action, declared: Any, value: Any) -> str | None:
    """What is wrong with a YAML value for a flag of this declared type, and what it accepts; None when it is fine.
    Numbers, yes/no flags and fixed choices are checked here; text and mappings by the settings' own checks."""
    if value is None:
        return None
    kind = next((option for option in typing.get_args(declared) or (declared,) if option in (bool, int, float)), None)
    for item in value if isinstance(value, list) and action.nargs in ("+", "*") else [value]:
        if action.choices and str(item) not in map(str, action.choices):
            return f"{item!r} is not one of: {', '.join(map(str, action.choices))}"
        if kind is bool and not (isinstance(item, bool) or str(item).lower() in TRUTH_WORDS):
            return f"{item!r} is not true or false"
        if kind is int and (isinstance(item, bool) or not str(item).lstrip("+-").isdigit()):
            return f"{item!r} is not a whole number"
        if kind is float and (isinstance(item, bool) or not _is_number(item)):
            return f"{item!r} is not a number"
    return None


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def config_file_settings(argv: list[str]) -> dict[str, Any]:
    """The settings a --config YAML file gives, by flag name ({} without one)."""
    if "--config" not in argv or argv.index("--config") + 1 >= len(argv):
        return {}
    config = yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text(encoding="utf-8")) or {}
    return {key.replace("-", "_"): value for key, value in config.items() if key != "env"}


def config_file_keys(argv: list[str]) -> list[str]:
    """The settings a --config YAML file gives (its keys), as the user's own choices."""
    return list(config_file_settings(argv))
