"""Accuracy gates: is a trained checkpoint good enough? Thresholds live in eval/gates.toml.

    EVAL_CHECKPOINT=outputs/easy/adapter pytest eval/test_gates.py            # built-in dev split
    pytest eval/test_gates.py --eval-checkpoint outputs/easy/adapter
    EVAL_CHECKPOINT=... EVAL_DATA_DIR=../spider EVAL_SPLIT=dev pytest eval/   # real Spider dev
    EVAL_REPORT=eval_out/easy/report.json pytest eval/test_gates.py           # gate a report already written

Also read: EVAL_LIMIT (first N questions), EVAL_BATCH_SIZE, EVAL_BACKEND (transformers or unsloth),
EVAL_OUT (report folder; default eval_out/<checkpoint>-<split>). With no checkpoint and no report
the checkpoint gates skip, and the gates themselves are checked on the scripted policies.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eval.checkpoint import import_unsloth
from eval.conftest import GATE_RESULTS
from eval.evaluate import (
    EvalSettings,
    build_policy,
    default_backend,
    evaluate,
    load_questions,
    settings_from_environment,
)
from eval.gates import Gate, load_gates, parse_gates
from eval.report import write_report

GATES = load_gates()


@pytest.fixture(scope="module")
def checkpoint_report(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The report of the checkpoint under test: evaluated now (and written to its folder), or read from EVAL_REPORT."""
    if os.environ.get("EVAL_REPORT"):
        return json.loads(Path(os.environ["EVAL_REPORT"]).read_text(encoding="utf-8"))
    checkpoint = request.config.getoption("--eval-checkpoint", default=None) or os.environ.get("EVAL_CHECKPOINT")
    if not checkpoint:
        pytest.skip("no checkpoint to gate: set EVAL_CHECKPOINT=PATH (or --eval-checkpoint PATH, or EVAL_REPORT)")
    if os.environ.get("EVAL_BACKEND") == "unsloth":
        import_unsloth()  # best before transformers loads; under pytest other modules may have imported it
    settings = settings_from_environment(checkpoint)
    report = evaluate(settings, load_questions(settings), build_policy(settings))
    files = write_report(report, settings.out_dir)
    print(f"\ncheckpoint report: {files['report.md']}")
    return report


@pytest.mark.parametrize("gate", GATES, ids=str)
def test_checkpoint_passes_gate(gate: Gate, checkpoint_report: dict[str, Any], request: pytest.FixtureRequest) -> None:
    by_hardness = checkpoint_report["by_hardness"]
    if by_hardness[gate.group]["n"] == 0:
        pytest.skip(f"no {gate.group} questions in the evaluated split")
    passes = gate.passes(by_hardness)
    request.config.stash[GATE_RESULTS].append(
        f"{'passed' if passes else 'FAILED'}: {gate} (scored {gate.value(by_hardness):.3f}, "
        f"{by_hardness[gate.group]['n']} {gate.group} questions)")
    assert passes, f"{gate} failed: the checkpoint scored {gate.value(by_hardness):.3f}"


# --- the gates themselves, on known policies --------------------------------------------------------


@pytest.fixture(scope="module")
def scripted_reports() -> dict[str, dict[str, Any]]:
    reports = {}
    for name in ("oracle", "never_stop", "random"):
        settings = EvalSettings(policy=name, progress=False)
        reports[name] = evaluate(settings, load_questions(settings), build_policy(settings))
    return reports


def test_the_gates_file_holds_the_plans_bar() -> None:
    assert any(gate.metric == "accuracy" and gate.group == "easy" and gate.bound == 0.5 for gate in GATES)
    assert any(gate.metric == "accuracy" and gate.group == "medium" and gate.bound == 0.4 for gate in GATES)
    assert {gate.metric for gate in GATES} == {"accuracy", "mean_steps", "post_episode_calls"}


def test_the_oracle_passes_every_gate(scripted_reports: dict[str, dict[str, Any]]) -> None:
    assert all(gate.passes(scripted_reports["oracle"]["by_hardness"]) for gate in GATES)


def test_the_gates_catch_a_random_policy_and_one_that_never_stops(scripted_reports: dict[str, dict[str, Any]]) -> None:
    failed = {name: {str(gate) for gate in GATES if not gate.passes(report["by_hardness"])}
              for name, report in scripted_reports.items()}
    assert {"easy accuracy > 0.5", "medium accuracy > 0.4"} <= failed["random"]
    assert failed["never_stop"] == {"overall post_episode_calls <= 0.1"}


def test_a_gate_on_a_group_without_questions_cannot_pass_silently() -> None:
    gate = Gate(metric="accuracy", group="extra", bound=0.2, must_exceed=True)
    with pytest.raises(ValueError, match="no extra questions"):
        gate.passes({"extra": {"n": 0, "accuracy": None}})


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ({"accuracy_at_least": {"easy": 0.5}}, "unknown table"),
        ({"accuracy_above": {"trivial": 0.5}}, "trivial is not one of easy, medium, hard, extra, overall"),
        ({"mean_steps_at_most": {"overall": "eight"}}, "must be a number"),
    ],
    ids=["unknown table", "unknown group", "not a number"],
)
def test_gate_file_mistakes_are_named(tables: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_gates(tables)


# --- the gates on a checkpoint, as `EVAL_CHECKPOINT=PATH python -m pytest eval/` runs them -------------

OTHER_BACKEND = "unsloth" if default_backend() == "transformers" else "transformers"  # not the default, to be seen
EVAL_VARIABLES = ("EVAL_CHECKPOINT", "EVAL_REPORT", "EVAL_DATA_DIR", "EVAL_SPLIT", "EVAL_LIMIT", "EVAL_BATCH_SIZE",
                  "EVAL_BACKEND", "EVAL_OUT")


def test_with_no_variables_the_settings_are_evalsettings_defaults(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in EVAL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    (tmp_path / "config.json").write_text("{}")  # enough for a checkpoint folder; nothing is loaded
    assert settings_from_environment(str(tmp_path)) == EvalSettings(checkpoint=tmp_path)


@pytest.mark.parametrize(
    ("variable", "value", "setting", "expected"),
    [
        ("EVAL_DATA_DIR", "../spider", "data_dir", Path("../spider")),
        ("EVAL_SPLIT", "train", "split", "train"),
        ("EVAL_LIMIT", "7", "limit", 7),
        ("EVAL_BATCH_SIZE", "3", "batch_size", 3),
        ("EVAL_BACKEND", OTHER_BACKEND, "backend", OTHER_BACKEND),
        ("EVAL_OUT", "eval_out/mine", "out", Path("eval_out/mine")),
    ],
)
def test_each_eval_variable_reaches_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str,
                                                 value: str, setting: str, expected: Any) -> None:
    for other in EVAL_VARIABLES:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(variable, value)
    (tmp_path / "config.json").write_text("{}")
    settings = settings_from_environment(str(tmp_path))
    assert getattr(settings, setting) == expected
    defaults = EvalSettings(checkpoint=tmp_path)
    assert [name for name in ("data_dir", "split", "limit", "batch_size", "backend", "out")
            if getattr(settings, name) != getattr(defaults, name)] == [setting]  # the one it names, nothing else


def test_a_number_variable_that_is_no_number_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_LIMIT", "ten")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="EVAL_LIMIT='ten': give a whole number"):
        settings_from_environment(str(tmp_path))


@pytest.fixture(scope="module")
def tiny_adapter(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter on the tiny random Qwen3, saved as train.py saves one (it names its base model)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    adapter = tmp_path_factory.mktemp("checkpoint") / "adapter"
    model.save_pretrained(adapter)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(adapter)
    return adapter


def run_gates(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m pytest eval/test_gates.py` on the checkpoint gates only, with these EVAL_* variables alone."""
    clean = {key: value for key, value in os.environ.items() if key not in EVAL_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "eval/test_gates.py", "-k", "test_checkpoint_passes_gate", "-p",
         "no:cacheprovider", "-q"],
        cwd=Path(__file__).resolve().parent.parent, env={**clean, "HF_HUB_OFFLINE": "1", **environment},
        capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_gates_run_on_a_checkpoint_and_report_their_numbers(tiny_adapter: Path, tmp_path: Path) -> None:
    """The README's `EVAL_CHECKPOINT=outputs/easy/adapter python -m pytest eval/`, on a random tiny model: every
    gate runs and says what it measured (whether a random model passes them does not matter)."""
    # The built-in dev split opens with 20 easy questions: 22 reach medium, which has a gate too
    result = run_gates({"EVAL_CHECKPOINT": str(tiny_adapter), "EVAL_LIMIT": "22", "EVAL_BATCH_SIZE": "22",
                        "EVAL_OUT": str(tmp_path)})
    output = result.stdout + result.stderr
    assert result.returncode in (0, 1), output  # passed or failed gates; not an error, not a usage problem
    counts = {word: int(number) for number, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)",
                                                                output.strip().splitlines()[-1])}
    assert counts.get("passed", 0) + counts.get("failed", 0) == len(GATES), output  # none erred, none skipped
    summary = output.split("checkpoint gates")[-1]
    for gate in GATES:
        assert f": {gate} (scored " in summary, output
    report = tmp_path / "report.json"
    by_hardness = json.loads(report.read_text())["by_hardness"]
    assert (by_hardness["easy"]["n"], by_hardness["medium"]["n"]) == (20, 2)  # EVAL_LIMIT and EVAL_OUT were read
    # EVAL_REPORT gates that report again without a model, with the same numbers.
    again = run_gates({"EVAL_REPORT": str(report)})
    assert again.returncode == result.returncode
    assert again.stdout.split("checkpoint gates")[-1].splitlines()[1:4] == summary.splitlines()[1:4]
