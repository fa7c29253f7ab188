"""benchmarks/eval_backends.py: two backends' reports compared episode by episode (the engines themselves run in
scripts/vllm_cpu_check.sh, not here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from eval_backends import episode_differences  # noqa: E402


def question(text: str, sql: str = "SELECT 1", **changed: object) -> dict:
    played = {"question": text, "tool_calls": [{"tool": "query", "arguments": {"sql": sql}, "output": "1"}],
              "final_text": "Done.", "stop_reason": "no_tool_call", "answer": "1", "turns": 3, "generated_tokens": 40,
              "correct": True}
    return played | changed


def test_episodes_differ_only_where_what_the_model_did_differs() -> None:
    native = [question("a"), question("b"), question("c")]
    served = [question("a", correct=False),  # a score is not the episode: it follows from the episode
              question("b", sql="SELECT 2"), question("c", stop_reason="malformed_tool_call", generated_tokens=41)]
    differences = episode_differences(native, served)
    assert [difference["question"] for difference in differences] == ["b", "c"]
    assert set(differences[0]) == {"question", "tool_calls"}
    assert differences[1]["stop_reason"] == ["no_tool_call", "malformed_tool_call"]
    assert differences[1]["generated_tokens"] == [40, 41]
    assert episode_differences(native, native) == []


def test_reports_of_other_questions_are_refused() -> None:
    with pytest.raises(ValueError, match="other questions"):
        episode_differences([question("a")], [question("b")])


def test_two_reports_already_written_are_compared_and_the_figures_kept(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from eval_backends import main

    def report(questions: list[dict], cached: float | None) -> dict:
        return {"questions": questions, "by_hardness": {"overall": {"accuracy": 0.5}},
                "timing": {"elapsed_s": 2.0, "generation": {"prefix_cache_hit_rate": cached}}}

    paths = [tmp_path / "native.json", tmp_path / "vllm.json"]
    paths[0].write_text(json.dumps(report([question("a"), question("b")], None)))
    paths[1].write_text(json.dumps(report([question("a"), question("b", answer="2")], 0.8)))
    assert main(["--reports", *map(str, paths), "--out", str(tmp_path / "compared.json")]) == 0
    assert "identical episodes: 1 of 2" in capsys.readouterr().out
    written = json.loads((tmp_path / "compared.json").read_text())
    assert written["figures"][str(paths[1])]["prefix_cache_hit_rate"] == 0.8
    assert [difference["question"] for difference in written["differences"]] == ["b"]
