"""The evaluation's model turns through vLLM: continuous batching, a paged KV cache, prefix caching across turns.

    python -m eval --checkpoint outputs/easy/adapter --backend vllm          # a CUDA machine with vllm installed

The episodes are the ones ``ModelPolicy`` plays, token for token: the same prompts, the same stop rule (vLLM stops
a turn at the stop rule's ids, ``stop_token_ids``) and the same turn closing and parsing. Only the generate call
differs: each turn's contexts go to vLLM as token ids, and vLLM schedules them (a row leaves when its turn ends, no
row waits on the longest, and the context a turn shares with the turn before comes from the prefix cache).

vLLM serves a model folder, not a LoRA plus the warm-up's tool-tag rows (a ``LoRARequest`` carries no embedding
rows, docs/vllm.md): an adapter is merged into its base on the CPU first (``eval.checkpoint.load_checkpoint``:
LoRA merged, tag rows written in) and saved to a temporary folder that lives until vLLM has loaded it.
"""

from __future__ import annotations

import importlib.util
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from eval.checkpoint import CheckpointError, checkpoint_kind, load_checkpoint
from eval.model_policy import Completion, GenerationCall, ModelPolicy

MISSING_VLLM = ("--backend vllm needs vLLM and a CUDA GPU (pip install vllm; on the project's GPU machine: "
                "bash scripts/gpu_session.sh vinstall, docs/vllm.md); or use --backend unsloth or transformers")


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


class VLLMPolicy(ModelPolicy):
    """ModelPolicy whose turns a vLLM engine generates (``llm``: a ``vllm.LLM`` serving the model ``config`` and
    ``generation_config`` describe)."""

    def __init__(self, llm: Any, tokenizer: Any, *, config: Any, generation_config: Any, max_new_tokens: int,
                 temperature: float = 0.0, seed: int = 0, name: str = "model") -> None:
        # ModelPolicy reads the model only for its config (context limit, end-of-turn ids, KV size): vLLM sizes its
        # own batches, so the stand-in sits off the GPU and no call is split by free memory.
        stand_in = SimpleNamespace(config=config, generation_config=generation_config, dtype=torch.bfloat16,
                                   device=torch.device("cpu"))
        super().__init__(stand_in, tokenizer, max_new_tokens=max_new_tokens, temperature=temperature, name=name)
        self.llm = llm
        self.seed = seed

    def generate(self, contexts: list[list[int]]) -> list[Completion]:
        """One turn for each context, in one vLLM call; completions in the given order."""
        from vllm import SamplingParams

        started = time.perf_counter()
        sampling = SamplingParams(
            max_tokens=self.max_new_tokens, stop_token_ids=list(self.stop_ids), skip_special_tokens=False,
            # vLLM's own top-k and top-p defaults consider every token (an explicit SamplingParams is not overridden
            # by the model's generation_config, which for Qwen3 asks for top_k 20).
            **({"temperature": self.temperature, "seed": self.seed} if self.temperature > 0 else {"temperature": 0.0}))
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in contexts], sampling, use_tqdm=False)
        if len(outputs) != len(contexts):
            raise RuntimeError(f"vLLM returned {len(outputs)} turns for {len(contexts)} contexts")
        completions = [self._completion(self.turn_ids(output.outputs[0])) for output in outputs]
        self.generation_calls.append(GenerationCall(
            batch=len(contexts), longest_context=max(len(ids) for ids in contexts),
            longest_new=max(len(output.outputs[0].token_ids) for output in outputs),
            new_tokens=sum(len(completion.ids) for completion in completions),
            seconds=time.perf_counter() - started, continuous=True,
            cached_context_tokens=sum(getattr(output, "num_cached_tokens", None) or 0 for output in outputs),
            context_tokens=sum(len(ids) for ids in contexts)))
        return completions

    def turn_ids(self, sample: Any) -> list[int]:
        """A sample's tokens with the id that stopped it last, whether or not vLLM kept it in ``token_ids``: the
        turn closing and the parser read a turn that ends at its stop id, as the native path writes it."""
        ids = list(sample.token_ids)
        if sample.finish_reason == "stop" and (not ids or ids[-1] not in self.stop_ids):
            stopped_by = sample.stop_reason if isinstance(sample.stop_reason, int) else self.end_of_turn_ids[0]
            ids.append(stopped_by)
        return ids


@contextmanager
def served_folder(checkpoint: Path, *, base_model: str | None = None):
    """A model folder vLLM can load: a full model folder as it is, an adapter merged into its base (LoRA and the
    warm-up's tool-tag rows) in a temporary folder, removed when the block ends."""
    if checkpoint_kind(checkpoint) == "model":
        yield checkpoint
        return
    model, tokenizer = load_checkpoint(checkpoint, base_model=base_model, device="cpu")
    with tempfile.TemporaryDirectory(prefix="eval-vllm-") as folder:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        del model
        yield Path(folder)


def load_vllm_policy(checkpoint: Path, *, base_model: str | None, max_new_tokens: int, temperature: float,
                     seed: int, name: str, dtype: str = "auto") -> VLLMPolicy:
    """A VLLMPolicy for a checkpoint; CheckpointError (a ValueError) with what to do when vLLM is not there.
    ``dtype``: vLLM's ("auto": bfloat16 for a float32 folder, as the native path runs on a GPU)."""
    if not vllm_available():
        raise CheckpointError(MISSING_VLLM)
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig
    from vllm import LLM

    with served_folder(checkpoint, base_model=base_model) as folder:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        config = AutoConfig.from_pretrained(str(folder))
        try:
            generation_config = GenerationConfig.from_pretrained(str(folder))
        except OSError:  # a folder without generation_config.json
            generation_config = None
        llm = LLM(model=str(folder), tokenizer=str(folder), dtype=dtype, seed=seed, enable_prefix_caching=True)
    return VLLMPolicy(llm, tokenizer, config=config, generation_config=generation_config,
                      max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, name=name)
