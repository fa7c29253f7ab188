"""benchmarks/decode_step.py's summary, from rows as a GPU run writes them (the measurement itself needs CUDA)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import decode_step  # noqa: E402


def test_the_summary_says_what_the_lora_adds_to_a_step_and_how_the_step_grows_with_the_batch(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"lora": lora, "core": "grouped", "padding": "padded", "batch": batch, "decode_ms": ms, "replays": 40}
            for lora, batch, ms in [("attached", 6, 5.4), ("attached", 96, 7.6), ("disabled", 6, 3.0),
                                    ("disabled", 96, 4.0), ("folded", 6, 2.7)]]
    rows.append({"core": "unsloth", "padding": "equal", "batch": 6, "decode_ms": 9.0, "replays": 40})  # before --lora
    decode_step.print_table(rows)
    printed = capsys.readouterr().out
    assert "LoRA attached, grouped, padded: 96 rows / 6 rows = 1.41x the step" in printed
    assert "LoRA disabled, grouped, padded: 96 rows / 6 rows = 1.33x the step" in printed
    assert "grouped, padded, 6 rows: the attached LoRA adds 2.40 ms to the disabled step of 3.00 ms (1.80x)" in printed
    assert "grouped, padded, 96 rows: the attached LoRA adds 3.60 ms to the disabled step of 4.00 ms (1.90x)" in printed
    assert "grouped, padded, 6 rows: the attached LoRA adds 2.70 ms to the folded step of 2.70 ms (2.00x)" in printed
    assert "96 rows: the attached LoRA adds" in printed and printed.count("the folded step") == 1
    assert "| attached | grouped | padded | 6 | 5.4 |" in printed and "|  | unsloth | equal | 6 | 9.0 |" in printed
    assert "WARNING" not in printed


def test_an_eager_run_is_called_so(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"lora": "attached", "core": "grouped", "padding": "padded", "batch": 6, "decode_ms": 36.0, "replays": 0}]
    decode_step.print_table(rows)
    printed = capsys.readouterr().out
    assert "WARNING: no decode step replayed a CUDA graph" in printed and "LoRA adds" not in printed


def test_a_steps_gpu_busy_share_is_its_kernels_milliseconds_over_its_wall_milliseconds() -> None:
    assert decode_step.busy_summary(24, busy_ms=192.0, wall_ms=576.0, steps=96) == {
        "batch": 24, "step_wall_ms": 6.0, "step_gpu_busy_ms": 2.0, "gpu_busy_share": 0.333}
    assert decode_step.busy_summary(6, busy_ms=1.0, wall_ms=0.0, steps=96)["gpu_busy_share"] is None


def test_the_folded_state_decodes_from_the_folded_weights_and_gives_them_back() -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)
    model = get_peft_model(Qwen2ForCausalLM(config), LoraConfig(r=2, target_modules=["q_proj", "down_proj"]))
    layers = [module for module in model.modules() if hasattr(module, "lora_A") and len(module.lora_A)]
    weights = [layer.base_layer.weight.data_ptr() for layer in layers]
    with decode_step.lora_state(model, "folded"):
        assert all(layer.merged_adapters for layer in layers)
        assert [layer.base_layer.weight.data_ptr() for layer in layers] != weights
    assert not any(layer.merged_adapters for layer in layers)
    assert [layer.base_layer.weight.data_ptr() for layer in layers] == weights
    with pytest.raises(SystemExit, match="no LoRA layer to fold"):
        decode_step.lora_state(Qwen2ForCausalLM(config), "folded")
