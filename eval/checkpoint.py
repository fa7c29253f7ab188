"""Loading what training saved: a PEFT adapter (merged into its base model) or a full model folder.

    model, tokenizer = load_checkpoint("outputs/easy/adapter")           # transformers, CPU or CUDA
    import_unsloth(); model, tokenizer = load_with_unsloth("outputs/easy/adapter")   # Unsloth, CUDA

An adapter folder has adapter_config.json, whose base_model_name_or_path names the base model (a
local folder, or a hub name already in the Hugging Face cache; --base-model overrides it). A full
model folder has config.json. Anything else is a CheckpointError that says what to pass instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded; the message says what to do."""


def checkpoint_kind(path: Path) -> str:
    """'adapter' (a PEFT adapter folder) or 'model' (a full model folder); CheckpointError otherwise."""
    if not path.exists():
        raise CheckpointError(f"no checkpoint at {path}: pass the folder train.py saved (e.g. outputs/easy/adapter)")
    if not path.is_dir():
        raise CheckpointError(f"{path} is a file; a checkpoint is a folder with adapter_config.json or config.json")
    if (path / "adapter_config.json").is_file():
        return "adapter"
    if (path / "config.json").is_file():
        return "model"
    raise CheckpointError(
        f"{path} holds neither adapter_config.json (a PEFT adapter) nor config.json (a full model); "
        f"files there: {sorted(child.name for child in path.iterdir())[:10]}"
    )


def adapter_base(path: Path, base_model: str | None = None) -> str:
    """The base model an adapter was trained on: base_model if given, else the one its config names."""
    if base_model:
        return base_model
    from models import read_adapter_config

    try:
        config = read_adapter_config(path)
    except ValueError as error:
        raise CheckpointError(str(error)) from None
    base = config.get("base_model_name_or_path")
    if not base:
        raise CheckpointError(f"{path}/adapter_config.json names no base model: pass --base-model PATH")
    return base


def load_checkpoint(path: str | Path, *, base_model: str | None = None, device: str | None = None) -> tuple[Any, Any]:
    """Model and tokenizer from a PEFT adapter (merged into its base for speed) or a full model folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    kind = checkpoint_kind(path)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    source = adapter_base(path, base_model) if kind == "adapter" else str(path)
    try:
        model = AutoModelForCausalLM.from_pretrained(source, dtype="auto")
    except OSError as error:
        raise CheckpointError(
            f"cannot load the model {source!r} ({error.__class__.__name__}): a local folder or a model in the "
            f"Hugging Face cache is needed{'; pass --base-model PATH to use another copy' if kind == 'adapter' else ''}"
        ) from None
    if kind == "adapter":
        from peft import PeftModel

        from models import apply_tool_token_rows, tool_token_rows

        model = PeftModel.from_pretrained(model, str(path)).merge_and_unload()
        apply_tool_token_rows(model, tool_token_rows(path))  # the warm-up's tag rows, carried by every phase
    has_tokenizer = (path / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(str(path) if has_tokenizer else source)
    return model.to(device).eval(), tokenizer


def import_unsloth() -> None:
    """Import unsloth, which must come before transformers and trl (it patches them), with its CUDA-graph
    decoding on: plain generate() then replays decode steps as Unsloth's GRPO does (Qwen3-1.7B on an H200,
    benchmarks/bench_rollouts.py: 2.9x the tokens/s at batch 16, 4.5x at batch 1, 2.4x the rollouts/s)."""
    os.environ.setdefault("UNSLOTH_DECODE_CUDA_GRAPHS", "1")
    import library_noise

    with library_noise.quiet_import():
        import unsloth  # noqa: F401


def load_with_unsloth(path: str | Path, *, max_seq_length: int = 16_384,
                      grouped_decode_attention: bool = True) -> tuple[Any, Any]:
    """Model and tokenizer through Unsloth's fast inference path (CUDA), decoding as training decodes
    (``generation.prepare_decoding``; ``grouped_decode_attention=False``: Unsloth's own attention call, to compare
    the two); call import_unsloth() first."""
    from unsloth import FastLanguageModel

    from generation import prepare_decoding
    from models import apply_tool_token_rows, tool_token_rows

    kind = checkpoint_kind(Path(path))
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=str(path), max_seq_length=max_seq_length, load_in_4bit=False, dtype=None
    )
    prepare_decoding(model, "unsloth", grouped_attention=grouped_decode_attention)
    if kind == "adapter":
        apply_tool_token_rows(model, tool_token_rows(Path(path)))
    FastLanguageModel.for_inference(model)
    return model, tokenizer
