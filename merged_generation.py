"""Rollouts generated from weights with the LoRA folded in, training on the LoRA as it is.

    merged = MergedGeneration.of(model)          # a PEFT LoRA model; None when it has no LoRA layer
    with merged.folded():                        # each layer's weight reads W + scaling * B @ A, adapters off
        model.generate(...)
    # out of the block: the base weights are the very tensors they were, the adapters on again

A decode step of a small model costs many times what reading its weights costs: it is a long chain of small kernels,
and an attached LoRA adds two small matrix products to every projection of every layer (seven projections a layer on
the Qwen models). Folded into a copy of the weights, the step runs the base model's kernels only. The copy is one
buffer per layer, allocated with the wrapper and kept from call to call: a CUDA graph captured while folded reads
the buffer's address, which must not change or be freed. It costs the targeted weights' size once more in memory
(2.44 GiB for Qwen2.5-Coder-1.5B, whose decode forward inside its L4-shaped GRPO step took 0.71x the attached
LoRA's, 2026-12-06e).

The folded weights round once in the weights' dtype, where the attached LoRA rounds its two products: the rollouts'
tokens come from nearly, not bit for bit, the distribution the trainer scores.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch


class MergedGenerationError(ValueError):
    """The model's adapters cannot be folded (what to do instead is in the message)."""


@dataclass
class _FoldedLayer:
    layer: Any  # a PEFT LoRA layer: base_layer, lora_A, lora_B, scaling, merged_adapters
    adapter: str
    buffer: torch.Tensor  # the folded weight, the base weight's shape and dtype, allocated once


class MergedGeneration:
    """The LoRA layers of one model and their folded buffers."""

    def __init__(self, layers: list[_FoldedLayer]) -> None:
        self.layers = layers

    @classmethod
    def of(cls, model: Any) -> MergedGeneration | None:
        """The model's LoRA layers (None when it has none); MergedGenerationError for a layer this cannot fold: not
        a plain linear base, several adapters active, or already merged."""
        layers = []
        for name, module in model.named_modules():
            if not (hasattr(module, "lora_A") and hasattr(module, "base_layer") and len(module.lora_A)):
                continue
            active = [adapter for adapter in getattr(module, "active_adapters", ()) if adapter in module.lora_A]
            if len(active) != 1:
                raise MergedGenerationError(f"--merged_generation folds one active adapter; {name} has {active}: "
                                            "train without it")
            if not isinstance(module.base_layer, torch.nn.Linear) or getattr(module, "fan_in_fan_out", False):
                raise MergedGenerationError(f"--merged_generation folds LoRA into linear layers; {name} is a "
                                            f"{type(module.base_layer).__name__}: train without it")
            weight = module.base_layer.weight
            if not weight.is_floating_point() or weight.element_size() < 2 or tuple(weight.shape) != (
                    module.base_layer.out_features, module.base_layer.in_features):
                raise MergedGenerationError(f"--merged_generation folds LoRA into whole 16- or 32-bit weights; "
                                            f"{name}'s are quantized or sharded ({weight.dtype}, "
                                            f"{tuple(weight.shape)}): leave out --load_in_4bit (or DeepSpeed ZeRO-3) "
                                            "or --merged_generation")
            if getattr(module, "merged_adapters", None):
                raise MergedGenerationError(f"{name}'s adapter is merged into its weights already: --merged_generation "
                                            "needs it attached, as training holds it")
            layers.append(_FoldedLayer(module, active[0], torch.empty_like(weight.data)))
        return cls(layers) if layers else None

    @contextlib.contextmanager
    def folded(self) -> Iterator[None]:
        """Inside the block each layer's weight is its buffer, W + scaling * B @ A, and PEFT and Unsloth read the
        layer as merged (base weights only); after it, the original weight tensors and the adapters again, also when
        the block raises."""
        originals: list[torch.Tensor] = []
        try:
            with torch.no_grad():
                for folded in self.layers:
                    layer, adapter = folded.layer, folded.adapter
                    weight = layer.base_layer.weight
                    lora_a, lora_b = layer.lora_A[adapter].weight, layer.lora_B[adapter].weight
                    torch.addmm(weight.data, lora_b.to(weight.dtype), lora_a.to(weight.dtype),
                                alpha=layer.scaling[adapter], out=folded.buffer)
                    originals.append(weight.data)
                    weight.data = folded.buffer
                    layer.merged_adapters = [adapter]
            yield
        finally:
            for folded, original in zip(self.layers, originals, strict=False):
                folded.layer.base_layer.weight.data = original
                folded.layer.merged_adapters = []

    def buffer_bytes(self) -> int:
        return sum(folded.buffer.numel() * folded.buffer.element_size() for folded in self.layers)


def fold_lora_for_rollouts(trainer: Any, required: bool = True) -> MergedGeneration | None:
    """Wrap the trainer's rollout generation (TRL's ``_generate``: every turn of a generation batch, the weights
    constant throughout) in ``folded``: the LoRA is folded once a generation batch. None, and nothing wrapped, for a
    model without LoRA layers (full fine-tuning), and, unless ``required``, for one whose layers cannot be folded
    (which it says); ``required``: MergedGenerationError for those."""
    model = trainer.accelerator.unwrap_model(trainer.model_wrapped) if hasattr(trainer, "accelerator") else trainer.model
    try:
        merged = MergedGeneration.of(model)
    except MergedGenerationError as error:
        if required:
            raise
        print(f"[train] rollouts generate with the LoRA attached, not folded: {error}", flush=True)
        return None
    if merged is None:
        print("[train] --merged_generation: the model has no LoRA layer to fold; rollouts generate as they are",
              flush=True)
        return None
    print(f"[train] rollouts generate from {len(merged.layers)} layers' weights with the LoRA folded in "
          f"({merged.buffer_bytes() / 2**30:.2f} GiB of buffers beside the weights; --merged_generation false: "
          "from the attached LoRA, without them)", flush=True)
    generate = trainer._generate

    def generate_folded(*args: Any, **kwargs: Any) -> Any:
        with merged.folded():
            return generate(*args, **kwargs)

    trainer._generate = generate_folded
    return merged
