"""`python -m eval`: a run end to end in a subprocess, and bad input answered as usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval.__main__ import main

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_cli(*arguments: str) -> subprocess.CompletedProcess:
    environment = os.environ | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "eval", *arguments], cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
        timeout=300,
    )


def test_oracle_run_writes_the_report_and_prints_the_table(tmp_path: Path) -> None:
    result = run_cli("--policy", "oracle", "--limit", "5", "--out", str(tmp_path), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "| overall | 5 | 100.0% |" in result.stdout
    assert {path.name for path in tmp_path.iterdir()} == {
        "report.json", "report.md", "by_hardness.png", "gold.sql", "pred.sql"
    }
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["settings"]["policy"] == "oracle" and report["settings"]["split"] == "dev"
    assert report["by_hardness"]["overall"]["accuracy"] == 1.0 and len(report["questions"]) == 5


def test_checkpoint_run_on_the_tiny_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    result = run_cli("--checkpoint", str(tiny_model_dir), "--limit", "2", "--max-new-tokens", "4",
                     "--hardness", "medium", "--out", str(tmp_path), "--no-progress")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["settings"]["checkpoint"] == str(tiny_model_dir)
    assert [question["hardness"] for question in report["questions"]] == ["medium", "medium"]


def test_a_bad_checkpoint_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    result = run_cli("--checkpoint", str(tmp_path / "nothing"))
    assert result.returncode == 2
    assert "error: no checkpoint at" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "one of the arguments --checkpoint --policy is required"),
        (["--policy", "greedy"], "invalid choice: 'greedy'"),
        (["--policy", "oracle", "--checkpoint", "x"], "not allowed with argument"),
        (["--policy", "oracle", "--split", "test"], "invalid choice: 'test'"),
        (["--policy", "oracle", "--hardness", "trivial"], "invalid choice: 'trivial'"),
        (["--policy", "oracle", "--limit", "0"], "--limit must be at least 1, got 0"),
        (["--policy", "oracle", "--data-dir", "/no/such/folder"], "no data folder at /no/such/folder"),
        (["--policy", "oracle", "--temperature", "-1"], "--temperature must be 0 (greedy) or more"),
    ],
    ids=["no source", "unknown policy", "both sources", "bad split", "bad hardness", "zero limit",
         "missing data", "negative temperature"],
)
def test_usage_errors_name_the_problem(arguments: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_split_missing_from_the_data_folder_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "train_spider.json").write_text("[]")
    with pytest.raises(SystemExit):
        main(["--policy", "oracle", "--data-dir", str(tmp_path), "--split", "dev"])
    assert "no 'dev' split" in capsys.readouterr().err


def test_both_spellings_of_every_flag_are_accepted(tmp_path: Path, builtin_data_dir: Path) -> None:
    assert main(["--policy", "oracle", "--data_dir", str(builtin_data_dir), "--limit", "2", "--batch_size", "2",
                 "--out", str(tmp_path), "--no_progress"]) == 0
    assert json.loads((tmp_path / "report.json").read_text())["by_hardness"]["overall"]["n"] == 2


@pytest.mark.parametrize(("flags", "grouped"), [([], True), (["--no-grouped-decode-attention"], False)])
def test_the_unsloth_eval_decodes_with_trainings_attention_unless_told_not_to(
        tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], grouped: bool) -> None:
    from eval import __main__ as cli
    from eval import evaluate

    asked: list[bool] = []

    def load(path: Path, *, grouped_decode_attention: bool) -> tuple:
        asked.append(grouped_decode_attention)
        raise ValueError("stop here: the model is not loaded on this machine")

    monkeypatch.setattr(evaluate, "load_with_unsloth", load)
    monkeypatch.setattr(cli, "import_unsloth", lambda: None)
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: object())
    with pytest.raises(SystemExit):
        cli.run(["--checkpoint", str(tiny_model_dir), "--backend", "unsloth", "--limit", "1", "--out",
                 str(tmp_path), "--no-progress", *flags])
    assert asked == [grouped]


def test_a_second_split_plays_with_the_model_already_loaded(tiny_model_dir: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from eval import __main__ as cli

    loaded: list[str] = []
    load = cli.build_policy
    monkeypatch.setattr(cli, "build_policy", lambda settings: loaded.append(settings.split) or load(settings))
    common = ["--checkpoint", str(tiny_model_dir), "--limit", "1", "--max-new-tokens", "4", "--no-progress"]
    policy = cli.run([*common, "--split", "dev", "--out", str(tmp_path / "dev")])
    again = cli.run([*common, "--split", "train", "--out", str(tmp_path / "train")], policy=policy)
    assert again is policy and loaded == ["dev"]  # the checkpoint loaded once for both splits
    assert json.loads((tmp_path / "train" / "report.json").read_text())["counts"]["scored"] == 1


def test_hardness_names_are_read_as_the_data_loader_reads_them() -> None:
    from eval.evaluate import EvalSettings

    assert EvalSettings(policy="oracle", hardness=["Medium", "easy", "EASY"]).hardness == ["easy", "medium"]
    with pytest.raises(ValueError, match="unknown hardness 'eazy'; choose from easy, medium, hard, extra"):
        EvalSettings(policy="oracle", hardness=["eazy"])
