"""A phase that starts from an earlier adapter: the base model it needs, and its weights in a fresh LoRA.

    agent.model = start_adapter_base(adapter_dir, agent.model, "model" in explicit)   # the weights it was trained on
    load_adapter_weights(model, adapter_dir)                                          # into the phase's new LoRA

A phase's start adapter is the one its ``start_from`` phase saved (output_folders.py) or ``--start_adapter``; a
LoRA means nothing on other weights, so the phase loads the base model the adapter names, and the tool-tag rows
the warm-up trained (models.tool_token_rows) go into the base weights with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import models
from embedded import looks_like_a_path


def start_adapter_base(adapter_dir: Path, model: str, model_is_explicit: bool) -> str:
    """The base model a start adapter was trained on (adapter_config.json's base_model_name_or_path): the model this
    phase must load, since a LoRA means nothing on other weights. An explicit --model that differs is refused."""
    try:
        config = models.read_adapter_config(adapter_dir)
    except ValueError as error:
        raise ValueError(f"the start adapter's {error}, or start from another adapter") from None
    base = config.get("base_model_name_or_path")
    if not base:
        return model  # an adapter that names no base: --model is all there is to go on
    if model_is_explicit and not same_model(model, base):
        raise ValueError(f"--model {model} is not the model the start adapter {adapter_dir} was trained on ({base}): "
                         "leave --model out to load that one, or start from an adapter trained on your --model")
    if looks_like_a_path(base) and not Path(base).expanduser().is_dir():
        raise FileNotFoundError(f"the start adapter {adapter_dir} was trained on {base}, which is no longer there: "
                                "train its phase again (or pass --model with a copy of that base model)")
    return base


def same_model(first: str, second: str) -> bool:
    """Whether two --model values name one model: the same folder however written, or the same hub name."""
    if looks_like_a_path(first) and looks_like_a_path(second):
        return Path(first).expanduser().resolve() == Path(second).expanduser().resolve()
    return first == second


def load_adapter_weights(model: Any, adapter_dir: Path) -> None:
    """Carry a saved LoRA into the fresh, trainable one (same rank and targets), and the tool-token rows it
    carries into the base weights."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    saved = load_file(adapter_dir / "adapter_model.safetensors")
    rows = models.tool_token_rows(adapter_dir)
    models.apply_tool_token_rows(model, rows)
    result = set_peft_model_state_dict(model, saved)
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(f"{adapter_dir} does not fit this model's LoRA (rank/targets differ): {unexpected[:3]}")
