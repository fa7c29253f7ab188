"""merged_generation.py: inside the block the model computes what its attached LoRA computes, from folded weights;
after it (also after an error) the base weights are the very tensors they were and the adapters act again."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import Qwen2Config, Qwen2ForCausalLM

from merged_generation import MergedGeneration, MergedGenerationError, fold_lora_for_rollouts

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def tiny_lora_model(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = get_peft_model(Qwen2ForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS))
    with torch.no_grad():  # PEFT starts B at zero, where folding would change nothing
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.2)
    return model.eval()


def logits(model: Any, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


def base_weights(model: Any) -> dict[str, torch.Tensor]:
    return {name: parameter for name, parameter in model.named_parameters() if "base_layer.weight" in name}


def test_folded_weights_compute_what_the_attached_lora_does_and_the_base_comes_back_unchanged() -> None:
    model = tiny_lora_model()
    ids = torch.randint(0, 96, (3, 9))
    attached = logits(model, ids)
    with model.disable_adapter():
        base_only = logits(model, ids)
    assert not torch.allclose(attached, base_only, atol=1e-3)  # the LoRA matters in this model
    weights = base_weights(model)
    before = {name: (parameter.data_ptr(), parameter.detach().clone()) for name, parameter in weights.items()}
    merged = MergedGeneration.of(model)
    assert merged is not None and len(merged.layers) == 2 * len(TARGETS)
    with merged.folded():
        assert torch.allclose(logits(model, ids), attached, atol=1e-5)
        assert all(weights[name].data_ptr() != pointer for name, (pointer, _) in before.items())
    for name, (pointer, values) in before.items():
        assert weights[name].data_ptr() == pointer and torch.equal(weights[name], values)
    assert all(not folded.layer.merged_adapters for folded in merged.layers)
    assert torch.equal(logits(model, ids), attached)  # the adapters act again, as before
    assert merged.buffer_bytes() == sum(values.numel() * values.element_size() for _, values in before.values())


def test_the_buffers_stay_put_across_folds_and_read_the_lora_as_it_is_then() -> None:
    """A CUDA graph captured inside one fold replays inside the next: the buffers' addresses must not move, and
    what they hold must follow the LoRA the optimizer has changed since."""
    model = tiny_lora_model(1)
    ids = torch.randint(0, 96, (2, 7))
    merged = MergedGeneration.of(model)
    with merged.folded():
        pointers = [folded.buffer.data_ptr() for folded in merged.layers]
    with torch.no_grad():  # an optimizer step
        for name, parameter in model.named_parameters():
            if "lora_A" in name:
                parameter.mul_(1.5)
    attached = logits(model, ids)
    with merged.folded():
        assert [folded.buffer.data_ptr() for folded in merged.layers] == pointers
        assert torch.allclose(logits(model, ids), attached, atol=1e-5)


def test_an_error_inside_the_block_still_gives_the_weights_back() -> None:
    model = tiny_lora_model(2)
    ids = torch.randint(0, 96, (1, 5))
    attached = logits(model, ids)
    merged = MergedGeneration.of(model)
    with pytest.raises(RuntimeError, match="generation failed"), merged.folded():
        raise RuntimeError("generation failed")
    assert torch.equal(logits(model, ids), attached)
    assert all(not folded.layer.merged_adapters for folded in merged.layers)


def test_a_model_that_cannot_be_folded_says_why() -> None:
    torch.manual_seed(3)
    plain = Qwen2ForCausalLM(Qwen2Config(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, num_key_value_heads=2))
    assert MergedGeneration.of(plain) is None  # full fine-tuning: nothing to fold
    model = tiny_lora_model(4)
    model.merge_adapter()
    with pytest.raises(MergedGenerationError, match="merged into its weights already"):
        MergedGeneration.of(model)
    quantized = tiny_lora_model(7)
    layer = quantized.base_model.model.model.layers[0].self_attn.q_proj.base_layer
    layer.weight = torch.nn.Parameter(torch.zeros(layer.out_features * layer.in_features // 2, 1, dtype=torch.uint8),
                                      requires_grad=False)  # packed 4-bit, as bitsandbytes keeps it
    with pytest.raises(MergedGenerationError, match="quantized .*--load_in_4bit"):
        MergedGeneration.of(quantized)
    two = tiny_lora_model(5)
    two.add_adapter("second", LoraConfig(r=2, target_modules=["q_proj"]))
    two.base_model.set_adapter(["default", "second"])
    with pytest.raises(MergedGenerationError, match="folds one active adapter"):
        MergedGeneration.of(two)


def test_the_trainers_rollouts_generate_folded_and_train_on_the_attached_lora() -> None:
    model = tiny_lora_model(6)
    ids = torch.randint(0, 96, (2, 6))
    attached = logits(model, ids)
    seen: dict[str, Any] = {}

    class FakeTrainer:
        def __init__(self) -> None:
            self.model = model

        def _generate(self, prompts: list[str]) -> list[str]:
            seen["folded"] = all(folded_layer.layer.merged_adapters for folded_layer in merged.layers)
            seen["logits"] = logits(model, ids)
            return prompts

    trainer = FakeTrainer()
    merged = fold_lora_for_rollouts(trainer)
    assert merged is not None and trainer._generate(["q"]) == ["q"]
    assert seen["folded"] and torch.allclose(seen["logits"], attached, atol=1e-5)
    assert torch.equal(logits(model, ids), attached) and not any(f.layer.merged_adapters for f in merged.layers)
    no_lora = types.SimpleNamespace(model=torch.nn.Linear(2, 2), _generate=lambda prompts: prompts)
    assert fold_lora_for_rollouts(no_lora) is None and no_lora._generate(["q"]) == ["q"]


def test_by_default_a_model_that_cannot_be_folded_generates_attached_and_says_why(
        capsys: pytest.CaptureFixture[str]) -> None:
    model = tiny_lora_model(8)
    model.merge_adapter()  # cannot be folded again
    generate = types.SimpleNamespace(calls=0)

    def rollouts(prompts: list[str]) -> list[str]:
        generate.calls += 1
        return prompts

    trainer = types.SimpleNamespace(model=model, _generate=rollouts)
    assert fold_lora_for_rollouts(trainer, required=False) is None
    assert trainer._generate is rollouts  # left as it was
    assert "rollouts generate with the LoRA attached, not folded: " in capsys.readouterr().out
    with pytest.raises(MergedGenerationError, match="merged into its weights already"):
        fold_lora_for_rollouts(trainer)  # asked for: an error, not a quiet fallback


def test_train_refuses_folding_beside_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    import train

    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))  # as where vLLM is installed
    with pytest.raises(ValueError, match="--merged_generation folds the LoRA for the native generation"):
        train.parse_config(["--output_dir", "/tmp/unused", "--merged_generation", "true", "--fast_inference", "true"])
    agent, _, _ = train.parse_config(["--output_dir", "/tmp/unused", "--merged_generation", "true"])
    assert agent.merged_generation is True
    agent, _, _ = train.parse_config(["--output_dir", "/tmp/unused", "--fast_inference", "true"])
    assert agent.merged_generation is None  # unset: vLLM generates, nothing to fold (generation.wrap_trainer)
