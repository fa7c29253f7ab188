"""Loading checkpoints: a PEFT adapter onto its base model, a full model, and what is neither."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.checkpoint import CheckpointError, adapter_base, checkpoint_kind, load_checkpoint


def test_an_adapter_loads_onto_its_base_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    adapter = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    adapter.save_pretrained(tmp_path / "adapter")
    assert checkpoint_kind(tmp_path / "adapter") == "adapter"
    model, tokenizer = load_checkpoint(tmp_path / "adapter")
    assert not hasattr(model, "peft_config")  # merged into the base for speed
    assert tokenizer.eos_token == "<|im_end|>"

    config_path = tmp_path / "adapter" / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps(config | {"base_model_name_or_path": "nobody/not-a-model"}))
    with pytest.raises(CheckpointError, match="--base-model PATH"):
        load_checkpoint(tmp_path / "adapter")
    load_checkpoint(tmp_path / "adapter", base_model=str(tiny_model_dir))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda path: path / "missing", "no checkpoint at"),
        (lambda path: (path / "weights.bin").touch() or path / "weights.bin", "is a file"),
        (lambda path: (path / "notes.txt").touch() or path, "neither adapter_config.json"),
    ],
    ids=["missing", "a file", "no config"],
)
def test_checkpoint_errors_say_what_is_wrong(tmp_path: Path, make: Any, message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        checkpoint_kind(make(tmp_path))


@pytest.mark.parametrize("written", ["", '{"peft_type": ', "[]"])
def test_a_damaged_adapter_config_is_named(tmp_path: Path, written: str) -> None:
    """An adapter cut short on its way between machines: the error names the file, not a bare JSON message."""
    (tmp_path / "adapter_config.json").write_text(written, encoding="utf-8")
    with pytest.raises(CheckpointError, match="adapter_config.json (is not readable JSON|holds no settings)"):
        adapter_base(tmp_path)


def test_a_full_model_folder_loads_with_its_tokenizer(tiny_model_dir: Path) -> None:
    assert checkpoint_kind(tiny_model_dir) == "model"
    model, tokenizer = load_checkpoint(tiny_model_dir, device="cpu")
    assert model.config.model_type == "qwen3" and not model.training
    assert tokenizer.convert_tokens_to_ids("<tool_call>") == 151_657
