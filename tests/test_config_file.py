"""config_file.py: a --config YAML file's mistakes, each one line that names the file, the key and what it accepts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest

from config_file import check_config_file, config_file_keys


@dataclass
class Settings:
    num_generations: int = 6
    learning_rate: float = 1e-5
    stop_at_tool_call: bool = True
    max_questions: int | None = None
    lr_scheduler_type: str = "linear"


def settings_parser() -> argparse.ArgumentParser:
    """Flags as TrlParser declares them for Settings, and its --config."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    parser.add_argument("--num_generations", type=int)
    parser.add_argument("--learning_rate", type=float)
    parser.add_argument("--stop_at_tool_call", type=str, nargs="?", const=True)
    parser.add_argument("--no_stop_at_tool_call", dest="stop_at_tool_call", action="store_false")
    parser.add_argument("--max_questions", type=int)
    parser.add_argument("--lr_scheduler_type", choices=["linear", "cosine"])
    return parser


def config_error(tmp_path: Path, text: str) -> str:
    (tmp_path / "run.yaml").write_text(text)
    with pytest.raises(ValueError) as error:
        check_config_file(settings_parser(), ["--config", str(tmp_path / "run.yaml")], (Settings,))
    message = str(error.value)
    short = message.replace(str(tmp_path), "")  # the file's folder aside
    assert "\n" not in message and len(short) < 160, message  # one short line, not a usage text
    assert message.startswith(f"--config {tmp_path / 'run.yaml'}: "), message
    return message


def test_an_unknown_key_is_named_with_the_nearest_flag_and_where_the_keys_are_listed(tmp_path: Path) -> None:
    message = config_error(tmp_path, "num_generation: 6\n")
    assert "unknown key 'num_generation' (did you mean num_generations?)" in message
    assert "keys are the flags of `python train.py --help`" in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("num_generations: six\n", "num_generations: 'six' is not a whole number"),
        ("num_generations: 6.5\n", "num_generations: 6.5 is not a whole number"),
        ("max_questions: true\n", "max_questions: True is not a whole number"),
        ("learning_rate: fast\n", "learning_rate: 'fast' is not a number"),
        ("stop_at_tool_call: maybe\n", "stop_at_tool_call: 'maybe' is not true or false"),
        ("lr_scheduler_type: cosin\n", "lr_scheduler_type: 'cosin' is not one of: linear, cosine"),
    ],
    ids=["word for a whole number", "fraction for a whole number", "yes/no for a whole number", "word for a number",
         "not a yes/no", "not a choice"],
)
def test_a_value_of_the_wrong_type_names_the_key_and_what_it_accepts(tmp_path: Path, text: str,
                                                                     problem: str) -> None:
    assert config_error(tmp_path, text).endswith(problem)


def test_right_values_pass_and_their_keys_count_as_the_users_choices(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("num_generations: 2\nlearning_rate: 1e-4\nstop_at_tool_call: no\n"
                                       "max_questions: null\nlr_scheduler_type: cosine\nenv:\n  A: 'b'\n")
    argv = ["--config", str(tmp_path / "run.yaml")]
    check_config_file(settings_parser(), argv, (Settings,))
    assert config_file_keys(argv) == ["num_generations", "learning_rate", "stop_at_tool_call", "max_questions",
                                      "lr_scheduler_type"]
    assert config_file_keys(["--num_generations", "2"]) == []
