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
from pathlib import Path
from typing import Any

import pytest

from eval.checkpoint import import_unsloth
from eval.evaluate import EvalSettings, build_policy, evaluate, load_questions
from eval.gates import Gate, load_gates, parse_gates
from eval.report import write_report

GATES = load_gates()


def environment_number(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else None


def settings_from_environment(checkpoint: str) -> EvalSettings:
    return EvalSettings(
        checkpoint=Path(checkpoint),
        data_dir=Path(os.environ.get("EVAL_DATA_DIR") or EvalSettings.data_dir),
        split=os.environ.get("EVAL_SPLIT") or EvalSettings.split,
        limit=environment_number("EVAL_LIMIT"),
        batch_size=environment_number("EVAL_BATCH_SIZE") or EvalSettings.batch_size,
        backend=os.environ.get("EVAL_BACKEND") or EvalSettings.backend,
        out=Path(os.environ["EVAL_OUT"]) if os.environ.get("EVAL_OUT") else None,
    )


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
def test_checkpoint_passes_gate(gate: Gate, checkpoint_report: dict[str, Any]) -> None:
    by_hardness = checkpoint_report["by_hardness"]
    if by_hardness[gate.group]["n"] == 0:
        pytest.skip(f"no {gate.group} questions in the evaluated split")
    assert gate.passes(by_hardness), f"{gate} failed: the checkpoint scored {gate.value(by_hardness):.3f}"


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
    assert {gate.metric for gate in GATES} == {"accuracy", "mean_steps", "post_episode_calls"}


def test_the_oracle_passes_every_gate(scripted_reports: dict[str, dict[str, Any]]) -> None:
    assert all(gate.passes(scripted_reports["oracle"]["by_hardness"]) for gate in GATES)


def test_the_gates_catch_a_random_policy_and_one_that_never_stops(scripted_reports: dict[str, dict[str, Any]]) -> None:
    failed = {name: {str(gate) for gate in GATES if not gate.passes(report["by_hardness"])}
              for name, report in scripted_reports.items()}
    assert "easy accuracy > 0.5" in failed["random"]
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
