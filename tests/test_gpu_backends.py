"""benchmarks/gpu_backends.py on CPU: its per-step profile is computed from a real (tiny) GRPO run."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402,F401  (imports unsloth first, as train.py must)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_backends  # noqa: E402


@pytest.mark.slow
def test_a_variant_is_profiled_from_a_real_run(tiny_model_dir: Path) -> None:
    row = gpu_backends.measure_variant("transformers", str(tiny_model_dir), "stop", steps=2, num_generations=2,
                                       max_completion_length=8, data_dir=None)
    assert row["steps"] == 2 and row["median_step_s"] > 0
    assert row["calls"] and all(call["batch"] == 2 and call["new_tokens_max"] <= 8 for call in row["calls"])
    assert 0 < row["generation_share"] <= 1.5 and row["environment_share"] >= 0
    assert row["single_turn"]["batch"] == 2 and row["single_turn"]["new_tokens"] == 8
    assert row["tool_loop_vs_single_turn"] > 0
    # Every call is split into setup, prefill (the first forward, the first token), decode and teardown: one
    # forward a new token, and the parts add up to the call's own seconds.
    for call in row["calls"]:
        assert call["forwards"] == call["new_tokens_max"]
        parts = call["setup_s"] + call["prefill_s"] + call["decode_s"] + call["teardown_s"]
        assert min(call["setup_s"], call["prefill_s"], call["decode_s"], call["teardown_s"]) >= 0
        assert parts == pytest.approx(call["seconds"], abs=0.01)
        assert len(call["first_forwards_s"]) == min(4, call["forwards"])
        assert call["first_forwards_s"][0] == pytest.approx(call["prefill_s"], abs=1e-3)
    assert row["call_fixed_s"] > 0 and row["decode_ms_per_step"] > 0


def test_every_variant_is_a_set_of_train_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))  # as where vLLM is installed
    for name, flags in gpu_backends.VARIANTS.items():
        agent, _, _ = train.parse_config(flags)
        assert isinstance(agent.stop_at_tool_call, bool) and isinstance(agent.decode_graphs, bool)
        # Only the variant that says so caps its turns: the others measure what they measured before the cap.
        assert agent.cap_turns_at_budget == ("+cap" in name)
        assert agent.max_turn_tokens == (256 if "turn256" in name else 0)
        assert agent.fast_inference == gpu_backends.uses_vllm(name) == name.startswith("vllm")
        assert agent.vllm_memory_share == (0.15 if "l4share" in name else 0.5)
        assert agent.merged_generation is ("+merged" in name)
        assert agent.generation_mode_per_rollout == name.endswith("+rollout")


@pytest.mark.slow
def test_a_step_can_hold_several_prompt_groups_as_the_learning_proof_does(tiny_model_dir: Path) -> None:
    row = gpu_backends.measure_variant("transformers", str(tiny_model_dir), "stop+graphs+cap", steps=1,
                                       num_generations=2, max_completion_length=8, data_dir=None, prompts_per_step=2)
    assert row["prompts_per_step"] == 2 and row["calls"][0]["batch"] == 4  # 2 prompts x 2 generations
    assert row["single_turn"]["batch"] == 4


@pytest.mark.slow
def test_a_variant_starts_from_a_warm_up_adapter(tiny_model_dir: Path, tmp_path: Path) -> None:
    """--start-adapter: the benchmark's steps start from a warm-up, whose model makes real tool calls."""
    adapter = train.main(["--phase", "sft", "--model", str(tiny_model_dir), "--output_dir", str(tmp_path),
                          "--max_questions", "2", "--sft_epochs", "1", "--sft_batch_size", "2", "--report_to", "none"])
    row = gpu_backends.measure_variant("transformers", str(tiny_model_dir), "stop", steps=1, num_generations=2,
                                       max_completion_length=8, data_dir=None, start_adapter=str(adapter))
    assert row["start_adapter"] == str(adapter) and row["steps"] == 1
    # a wrong path is train.py's clear error, not a silent run from the base model
    with pytest.raises(train.SetupError, match="no adapter_model.safetensors there"):
        gpu_backends.measure_variant("transformers", str(tiny_model_dir), "stop", steps=1, num_generations=2,
                                     max_completion_length=8, data_dir=None, start_adapter=str(tmp_path / "none"))


def test_the_reserved_memory_a_step_adds_is_read_off_the_steps_peaks() -> None:
    """The 1.5B's mixed phase: reserved 17.1 -> 23.1 GiB over 30 steps, allocated flat (2026-12-06f)."""
    history = [{"step": step, "step_time": 10.0, "gpu/peak_reserved_gib": 17.0 + 0.2 * step} for step in range(1, 5)]
    history.append({"step": 4, "gpu/peak_reserved_gib": 17.8})  # the run's summary row: no step_time, not a step
    assert gpu_backends.reserved_growth_per_step(history) == 0.2
    assert gpu_backends.reserved_growth_per_step(history[:1]) is None  # one step: no growth to read
    assert gpu_backends.reserved_growth_per_step([{"step": 1, "step_time": 1.0}] * 3) is None  # CPU: no figures


def test_graph_captures_a_step_are_read_off_unsloths_cumulative_counter() -> None:
    """The 1.5B's L4 step: 38 captures in 38 calls, step 1 (the warm-up step, 19 calls) left out (2026-12-06f)."""
    calls = [{"step": 0, "captures": n} for n in range(1, 20)] + [{"step": 1, "captures": n} for n in range(20, 39)]
    assert gpu_backends.graph_captures_per_step(calls) == 19.0
    held = [{"step": 0, "captures": 3}] + [{"step": step, "captures": 3 + step} for step in (1, 1, 2, 2)]
    assert gpu_backends.graph_captures_per_step(held) == 1.0  # a capture a step: graphs kept across the calls
    assert gpu_backends.graph_captures_per_step([{"step": 1, "batch": 4}]) is None  # plain TRL: no counter


def test_a_calls_fixed_cost_and_decode_step_are_fitted_from_written_rows(tmp_path: Path) -> None:
    import fit_call_costs

    calls = [{"step": 0, "batch": 24, "new_tokens_max": 9, "seconds": 5.0}]  # the warm-up step: left out
    calls += [{"step": 1, "batch": 24, "new_tokens_max": n, "seconds": 0.4 + 0.015 * n} for n in (20, 60, 80)]
    calls += [{"step": 1, "batch": 2, "new_tokens_max": 3, "seconds": 0.5}]  # one call of that batch: no line
    (fit,) = fit_call_costs.fit_call_costs([{"backend": "unsloth", "variant": "v", "calls": calls}])
    assert fit == {"backend": "unsloth", "variant": "v", "batch": 24, "calls": 3, "fixed_s_per_call": 0.4,
                   "ms_per_decode_step": 15.0}
    # Each call keeping only its longest row's tokens: 20 + 60 + 80 + 3 of 24 x (20 + 60 + 80) + 2 x 3 row-steps
    for call in calls:
        call["new_tokens_sum"] = call["new_tokens_max"]
    assert fit_call_costs.kept_row_step_share({"calls": calls}) == round(163 / 3846, 2)
    with pytest.raises(SystemExit):
        fit_call_costs.main([str(tmp_path / "missing.json")])


def test_a_calls_split_gives_its_parts_medians_fixed_share_and_steady_steps_by_padding() -> None:
    import fit_call_costs

    def call(step: int, first: list[float], seconds: float, padded: bool, steady: float | None) -> dict:
        return {"step": step, "setup_s": 0.05, "prefill_s": first[0], "teardown_s": 0.05, "first_forwards_s": first,
                "seconds": seconds, "prompt_tokens_max": 100, "prompt_tokens_mean": 90.0 if padded else 100.0,
                "steady_forward_ms": steady}

    calls = [call(0, [3.0, 1.0, 0.5, 0.01], 6.0, padded=False, steady=5.0),  # warm-up step: medians leave it out
             call(1, [0.1, 0.08, 0.2, 0.01], 1.0, padded=False, steady=6.0),
             call(1, [0.1, 0.08, 0.2], 0.5, padded=True, steady=None),  # three forwards: no steady step
             call(2, [0.3, 0.06, 0.1, 0.02], 1.5, padded=True, steady=16.0)]
    split = fit_call_costs.call_split({"calls": calls})
    assert split == {"calls": 3, "setup_s": 0.05, "prefill_s": 0.1, "first_decode_s": 0.08, "second_decode_s": 0.2,
                     "teardown_s": 0.05, "fixed_share": round((0.48 + 0.48 + 0.56) / 3.0, 2),
                     "steady_ms_one_length": [5.0, 6.0], "steady_ms_padded": [16.0, 16.0]}
    assert fit_call_costs.call_split({"calls": [{"step": 1, "batch": 6, "seconds": 1.0}]}) is None  # older rows


def test_a_childs_lines_pass_through_as_they_come_and_a_hung_child_is_killed(
        capsys: pytest.CaptureFixture[str]) -> None:
    talking = [sys.executable, "-c", "import time; print('loading'); time.sleep(0.2); print('BENCH_RESULT {}')"]
    output, timed_out = gpu_backends.stream_child(talking, timeout_s=60, label="unsloth")
    assert output == ["loading\n", "BENCH_RESULT {}\n"] and not timed_out
    assert capsys.readouterr().out == "  [unsloth] loading\n  [unsloth] BENCH_RESULT {}\n"
    hung = [sys.executable, "-c", "import time; print('loading', flush=True); time.sleep(60)"]
    output, timed_out = gpu_backends.stream_child(hung, timeout_s=1, label="unsloth")
    assert output == ["loading\n"] and timed_out
