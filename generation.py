"""How the trainer generates: the stop rule's use, the turn caps, Unsloth's decode graphs and attention, the timing.

    generation.prepare_model(model, tokenizer, settings)            # before GRPOTrainer is built
    generation.prepare_decoding(model, backend)                      # the eval's loaded model: the decode path only
    generation.wrap_trainer(trainer, tokenizer, settings, timer)     # after: TRL's generation, wrapped in order

TRL's GRPOTrainer generates every turn of an episode (the first and each tool-loop turn) through one private
method, ``_generate_single_turn``; this module wraps it, in the order ``TURN_WRAPPERS`` names from the inside out:
the turn caps (``cap_turns``: each turn decodes at most what its episode may still keep), the turn closing
(``close_turns_at_tool_call_end``: a turn cut at ``</tool_call>`` gets its ``<|im_end|>``), then the timing (the
caller's timer, e.g. training_logs' per-step generation figures, sees the turns as TRL will). The per-rollout
generation mode and the folded LoRA (``merged_generation.py``) wrap ``_generate`` instead. The model side: the stop
rule's end-of-turn ids (``chat_format.install_stop_rule``), Unsloth's CUDA-graph decode for Qwen2
(``allow_unsloth_decode_graphs``) and the decode step's attention below.

The decode attention: Unsloth's graphed decode step runs each layer's attention eagerly between its captured
segments (``unsloth.models.llama._decode_attention_core``). For a batch of more than one row it calls SDPA with
grouped-query heads (``enable_gqa=True``) and, as soon as the rows' prompts differ in length (TRL left-pads them),
a boolean padding mask. PyTorch would pick cuDNN for that call (``torch._fused_sdp_choice``), but Unsloth keeps
decode calls off cuDNN on Hopper (``unsloth/utils/attention_dispatch.py``), and what runs is PyTorch's math path
(the profile of 96 padded rows: elementwise casts and float32 matrix-vector kernels, 3/4 of the decode time), which
repeats every KV head for its query heads and works in float32, so the step grows with the batch: 7.9 ms at 6 rows, 50.5 ms at 96 (random-weight Qwen2.5-0.5B, prompts of
700-1,300 tokens, H200, 2026-12-03; ``benchmarks/decode_step.py``). Qwen3's step (``sdpa_gqa_with_batch_mask=False``)
expands K and V to every head itself, the same copies.

``grouped_decode_attention`` computes the same softmax(QK^T)V the way Unsloth's batch-of-one step does: the query
heads of one KV head read that head in place, as one strided batched matrix product over the whole batch; the
padding mask is applied to the scores and the softmax runs in float32. It reads the cache once, whatever the batch:
9.4 ms at 6 padded rows, 13.8 ms at 96 (3.7x faster there). Its result lands in the query's own buffer, which the
graph segments read as they read the batch-of-one result. An unpadded batch keeps Unsloth's call, whose fused SDPA
kernel is faster there (``decode_attention_core``).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import Any, Protocol

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from chat_format import close_tool_call_turn, install_stop_rule
from merged_generation import fold_lora_for_rollouts

# From the inside out: the order in which wrap_trainer wraps TRL's _generate_single_turn.
TURN_WRAPPERS = ("cap_turns", "close_turns_at_tool_call_end", "timer")


class GenerationSettings(Protocol):
    """The settings this module reads (train.AgentConfig has them all)."""

    stop_at_tool_call: bool
    cap_turns_at_budget: bool
    max_turn_tokens: int
    fast_inference: bool
    generation_mode_per_rollout: bool
    merged_generation: bool | None  # None: wherever the weights can be folded
    decode_graphs: bool
    grouped_decode_attention: bool
    backend: str


def prepare_model(model: Any, tokenizer: Any, settings: GenerationSettings) -> list[int]:
    """The model side, before the trainer reads it: the stop rule's end-of-turn ids; the decode path
    (``prepare_decoding``); under Unsloth, the grouped decode attention (each as the settings ask, undone when
    they do not). Returns the stop rule's ids (empty without it), which a vLLM path hands on
    (``with_vllm_stop_ids``)."""
    stop_ids = install_stop_rule(model, tokenizer) if settings.stop_at_tool_call else []
    prepare_decoding(model, settings.backend, decode_graphs=settings.decode_graphs,
                     grouped_attention=settings.grouped_decode_attention)
    return stop_ids


def prepare_decoding(model: Any, backend: str, *, decode_graphs: bool = True, grouped_attention: bool = True) -> None:
    """The decode path of a model about to generate, trained or evaluated alike: the LM head's input made
    contiguous, and under Unsloth CUDA-graph decode for Qwen2 (``decode_graphs``) and the grouped decode attention
    (``grouped_attention``), each undone when off. The eval takes only this (it has its own stop ids,
    eval/model_policy.py), attention included: without the grouped core a padded batch runs PyTorch's math kernel,
    and the held-out eval at 512 rows takes several times as long (docs/gpu.md, 2026-12-05d)."""
    read_lm_head_input_contiguously(model)
    if backend == "unsloth":
        allow_unsloth_decode_graphs(model.config.model_type, decode_graphs)
        if grouped_attention:
            install_grouped_decode_attention()
        else:
            uninstall_grouped_decode_attention()


def wrap_trainer(trainer: Any, tokenizer: Any, settings: GenerationSettings,
                 timer: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None) -> list[str]:
    """Wrap the trainer's generation as the settings ask, in ``TURN_WRAPPERS`` order; returns the wrappers applied,
    inside out. ``timer`` takes the turn method and returns it timed."""
    applied = []
    if (settings.cap_turns_at_budget or settings.max_turn_tokens) and not settings.fast_inference:
        cap_turns(trainer, at_budget=settings.cap_turns_at_budget, turn_tokens=settings.max_turn_tokens)
        applied.append("cap_turns")
    if settings.stop_at_tool_call:
        close_turns_at_tool_call_end(trainer, tokenizer)
        applied.append("close_turns_at_tool_call_end")
    if timer is not None:
        trainer._generate_single_turn = timer(trainer._generate_single_turn)
        applied.append("timer")
    if settings.generation_mode_per_rollout:
        keep_generation_mode_across_turns(trainer)
    if settings.merged_generation is not False and not settings.fast_inference:
        # around _generate: once a generation batch, every turn inside it
        fold_lora_for_rollouts(trainer, required=settings.merged_generation is True)
    return applied


# --- the LM head ----------------------------------------------------------------------------------------------------

_LM_HEAD_HOOK = "_spider_grpo_contiguous_input_hook"


def read_lm_head_input_contiguously(model: Any) -> bool:
    """Hand the LM head a contiguous input. A strided one (a decode step's [rows, 1, hidden] that is a view of a
    larger buffer) sends ``F.linear`` to a batched product with the weight broadcast to every row, which reads the
    whole head once per row: at 96 rows the 0.5B's 272 MB head costs 6 ms of a decode step on the H200 (profile of
    benchmarks/decode_step.py, 2026-12-03: aten::bmm [96, 1, 896] x [96, 896, 151936]). Contiguous, the same
    product is one matrix product that reads it once. Returns False when the model has no output embeddings."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None:
        return False
    if _LM_HEAD_HOOK not in head.__dict__:
        head.__dict__[_LM_HEAD_HOOK] = head.register_forward_pre_hook(_contiguous_first_argument)
    return True


def _contiguous_first_argument(module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    if args and isinstance(args[0], torch.Tensor) and not args[0].is_contiguous():
        return (args[0].contiguous(), *args[1:])
    return None


# --- the turns: caps and closing -----------------------------------------------------------------------------------



class EpisodeBudget:
    """How much of ``max_completion_length`` the rows of a generation call may still keep.

    A rollout's first turn hands TRL's generation its prompts; every later turn a prompt followed by the episode
    so far (the model's turns and the tool replies), all of which TRL counts against the budget."""

    def __init__(self, max_completion_length: int) -> None:
        self.limit = max_completion_length
        self._prompts: set[tuple[int, ...]] = set()

    def _used(self, row: list[int]) -> int | None:
        """Tokens of the episode so far; None when the row extends none of the rollout's prompts."""
        starts = [len(prompt) for prompt in self._prompts
                  if len(prompt) <= len(row) and tuple(row[:len(prompt)]) == prompt]
        return len(row) - max(starts) if starts else None

    def remaining(self, rows: list[list[int]]) -> list[int] | None:
        """What each row may still keep; None for a rollout's first turn, whose rows become its prompts."""
        used = [self._used(row) for row in rows]
        if not used or None in used:
            self._prompts = {tuple(row) for row in rows}
            return None
        return [self.limit - tokens for tokens in used]  # type: ignore[operator]  (no None left)


class RowBudgetStop(StoppingCriteria):
    """Ends each row of one generate call once it has written its own budget of new tokens.

    generate() pads a row it has ended with the pad token, and TRL cuts every row to what its episode may keep,
    which is this budget: the tokens TRL keeps are the ones it kept before, and the call no longer waits on a
    row that is writing tokens TRL will throw away."""

    def __init__(self, prompt_length: int, budgets: list[int]) -> None:
        self.prompt_length = prompt_length  # TRL left-pads a call's prompts to the longest
        self.budgets = torch.tensor(budgets)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        if self.budgets.device != input_ids.device:
            self.budgets = self.budgets.to(input_ids.device)
        return self.budgets <= input_ids.shape[1] - self.prompt_length


@contextlib.contextmanager
def stopping_rows(model: Any, criterion: StoppingCriteria) -> Any:
    """``model.generate`` with ``criterion`` added to its stopping criteria, for one call of TRL's (which passes
    none of its own). An instance attribute, so Unsloth's own per-call wrapper of generate wraps this one."""
    had_own = "generate" in vars(model)
    generate = model.generate

    @functools.wraps(generate)
    def generate_with_criterion(*args: Any, **kwargs: Any) -> Any:
        criteria = StoppingCriteriaList([*(kwargs.pop("stopping_criteria", None) or []), criterion])
        return generate(*args, stopping_criteria=criteria, **kwargs)

    model.generate = generate_with_criterion
    try:
        yield
    finally:
        if had_own:
            model.generate = generate
        else:
            del model.generate


def cap_turns(trainer: Any, at_budget: bool = True, turn_tokens: int = 0) -> EpisodeBudget | None:
    """Cap each generation call's ``max_new_tokens``: ``at_budget``, a tool-loop turn at the largest budget its
    rows have left, and each row stopped at its own (RowBudgetStop); ``turn_tokens`` (above 0), every turn at that
    many tokens.

    TRL 1.15 generates every turn to ``max_completion_length`` and then cuts each row to what is left of its
    episode's budget, so a row that never closes its call decodes the whole length while the batch waits, and
    the tokens past its budget are thrown away (on the H200, 14-27 of 40 steps had such a turn: about 12 s
    against 5-6 s for the others; docs/gpu.md). Under ``at_budget`` every token TRL keeps is still generated;
    ``turn_tokens`` changes what a turn that runs on is trained on (less of it), as eval's per-turn cap does."""
    config = getattr(trainer, "generation_config", None)  # what TRL hands to generate; it wins over the model's
    if config is None:
        print("[train] --cap_turns_at_budget / --max_turn_tokens: this trainer has no generation_config to cap; "
              f"every turn decodes up to {trainer.max_completion_length} tokens", flush=True)
        return None
    budget = EpisodeBudget(trainer.max_completion_length)
    generate_turn = trainer._generate_single_turn

    @functools.wraps(generate_turn)
    def generate_capped_turn(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> tuple[list[list[int]], Any]:
        full = config.max_new_tokens
        remaining = budget.remaining(prompt_ids) if at_budget else None
        cap = full
        # generate writes one token at least; TRL cuts a row with none left
        rows = None if remaining is None else [max(1, tokens) for tokens in remaining]
        if full is not None and rows is not None:
            cap = min(cap, max(rows))
        if full is not None and turn_tokens:
            cap = min(cap, turn_tokens)
        with contextlib.ExitStack() as turn:
            if rows is not None and cap is not None and min(rows) < cap:  # a row would write past its budget
                model = trainer.accelerator.unwrap_model(trainer.model_wrapped)  # what TRL calls generate on
                turn.enter_context(stopping_rows(model, RowBudgetStop(max(map(len, prompt_ids)), rows)))
            if cap != full:
                config.max_new_tokens = cap
                turn.callback(setattr, config, "max_new_tokens", full)  # also when generation raises
            return generate_turn(prompt_ids, *args, **kwargs)

    trainer._generate_single_turn = generate_capped_turn
    return budget


def close_turns_at_tool_call_end(trainer: Any, tokenizer: Any) -> None:
    """Give every turn that stopped at </tool_call> its <|im_end|>, so the tokens TRL concatenates (and trains
    on) are the chat template's rendering of a one-call assistant turn (chat_format's stop rule)."""
    generate_turn = trainer._generate_single_turn  # the one method for the first turn and every tool-loop turn

    @functools.wraps(generate_turn)
    def generate_closed_turn(*args: Any, **kwargs: Any) -> tuple[list[list[int]], Any]:
        completion_ids, logprobs = generate_turn(*args, **kwargs)
        closed = [close_tool_call_turn(list(ids), tokenizer) for ids in completion_ids]
        return closed, logprobs_for_added_tokens(logprobs, closed)

    trainer._generate_single_turn = generate_closed_turn


def logprobs_for_added_tokens(logprobs: list[list[float]] | None,
                              completion_ids: list[list[int]]) -> list[list[float]] | None:
    """The sampling log-probabilities of a turn (vLLM's, one a token; None on the native path) lined up with its
    ids again after tokens were added to them: NaN for each added token. TRL joins the turns' log-probabilities by
    position, so a missing one would shift every later token of the episode. NaN is how TRL 1.15 and Unsloth mark
    a token vLLM did not score: its importance-sampling ratio is 1 and it stays out of the log-probability
    metrics, so the added <|im_end|> is trained as on the native path. A number would be wrong: vLLM never sampled
    the token, and 0.0 (probability 1) made its ratio the policy's own probability of closing the turn, as low
    as e^-20 where a weak model would not have closed it, which dropped the episode from the gradient."""
    if logprobs is None:
        return None
    return [[*row, *[math.nan] * (len(ids) - len(row))] for row, ids in zip(logprobs, completion_ids, strict=True)]


def with_vllm_stop_ids(generation_kwargs: dict[str, Any] | None, stop_ids: list[int]) -> dict[str, Any]:
    """GRPOConfig.generation_kwargs that make vLLM end a turn at the stop rule's ids too. TRL builds vLLM's
    SamplingParams from these (Unsloth's fast_inference path as well) but not from the model's generation_config,
    where the stop rule puts them for the native path (chat_format.install_stop_rule)."""
    kwargs = dict(generation_kwargs or {})
    kwargs["stop_token_ids"] = sorted({*kwargs.get("stop_token_ids", []), *stop_ids})
    return kwargs


def with_vllm_turn_cap(generation_kwargs: dict[str, Any] | None, turn_tokens: int) -> dict[str, Any]:
    """GRPOConfig.generation_kwargs that make vLLM end every turn at ``turn_tokens`` new tokens (--max_turn_tokens).
    TRL's colocate path, which Unsloth's in-process engine goes through as well, builds each turn's SamplingParams
    with ``max_tokens`` = max_completion_length and then applies these, so this one wins; a turn cut there has no
    closed call and ends its episode, as on the native path."""
    return {**(generation_kwargs or {}), "max_tokens": turn_tokens}


class GenerationScope:
    """TRL's per-turn generation context (``unwrap_model_for_generation``; under Unsloth it switches the
    model to inference mode, and on leaving frees the decode buffers and CUDA graphs and switches back),
    held open from a rollout's first turn to its last. Outside a rollout it is the per-turn context."""

    def __init__(self, per_turn: Callable[..., Any]) -> None:
        self.per_turn = per_turn
        self._rollout: contextlib.ExitStack | None = None
        self._model: Any = None

    @contextlib.contextmanager
    def unwrap(self, *args: Any, **kwargs: Any) -> Any:
        if self._rollout is None:
            with self.per_turn(*args, **kwargs) as model:
                yield model
            return
        if self._model is None:  # the rollout's first turn opens it, with TRL's own arguments
            self._model = self._rollout.enter_context(self.per_turn(*args, **kwargs))
        yield self._model

    def around(self, generate: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(generate)
        def generate_rollout(*args: Any, **kwargs: Any) -> Any:
            # The stack leaves the per-turn context when the rollout returns or fails: back to training mode
            # before TRL scores the completions.
            with contextlib.ExitStack() as rollout:
                self._rollout, self._model = rollout, None
                try:
                    return generate(*args, **kwargs)
                finally:
                    self._rollout = None

        return generate_rollout


def keep_generation_mode_across_turns(trainer: Any) -> GenerationScope:
    """Every turn of a rollout (TRL's ``_generate``: the first turn and the tool loop's) in one generation
    context. TRL looks the context up in the module of ``_generate_single_turn`` (Unsloth's compiled trainer
    has its own), so it is replaced there; a scope installed by an earlier trainer is reused."""
    namespace = type(trainer)._generate_single_turn.__globals__
    current = namespace["unwrap_model_for_generation"]
    scope = current.__self__ if isinstance(getattr(current, "__self__", None), GenerationScope) else GenerationScope(current)
    namespace["unwrap_model_for_generation"] = scope.unwrap
    trainer._generate = scope.around(trainer._generate)
    return scope


# --- Unsloth's decode step: CUDA graphs for Qwen2, the attention of a padded batch -----------------------------------

# Unsloth replays decode steps with CUDA graphs for the model types it has tested (Llama, Qwen3). Qwen2
# runs the same Llama decode kernels (unsloth/models/qwen2.py) but is left eager, several times slower per
# decode step on an H200 (docs/gpu.md); adding it to the set Unsloth reads at every generate call fixes that.
DECODE_GRAPH_MODEL_TYPES = ("qwen2",)


def allow_unsloth_decode_graphs(model_type: str, enabled: bool = True) -> None:
    """Let (or stop letting) Unsloth replay decode steps with CUDA graphs for ``model_type``."""
    try:
        from unsloth.models import _decode_graphs
    except ImportError:  # another Unsloth version, or none: nothing to widen
        return
    if model_type in DECODE_GRAPH_MODEL_TYPES:
        if enabled:
            _decode_graphs._SUPPORTED_MODEL_TYPES.add(model_type)
        else:
            _decode_graphs._SUPPORTED_MODEL_TYPES.discard(model_type)


_ORIGINAL_CORE = "_spider_grpo_original_decode_attention_core"


def decode_attention_core(
    attn: Any, Qn: torch.Tensor, kv_seq_len: int, attention_mask: torch.Tensor | None, bsz: int,
    sdpa_gqa_with_batch_mask: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What the installed decode step runs: the grouped products for a padded batch; Unsloth's SDPA call when the
    rows have no padding (no mask: PyTorch's fused kernel takes it, 11.3 against 13.3 ms a step at 96 rows on the
    H200, benchmarks/decode_step.py). Either way the result lands in the query's buffer, so a graph captured on one
    kind of call replays right on the other."""
    if attention_mask is None:
        from unsloth.models import llama

        A, K, V = getattr(llama, _ORIGINAL_CORE)(attn, Qn, kv_seq_len, None, bsz, sdpa_gqa_with_batch_mask)
        if A.data_ptr() != Qn.data_ptr():
            Qn.copy_(A)
        return Qn, K, V
    return grouped_decode_attention(attn, Qn, kv_seq_len, attention_mask, bsz, sdpa_gqa_with_batch_mask)


def grouped_decode_attention(
    attn: Any, Qn: torch.Tensor, kv_seq_len: int, attention_mask: torch.Tensor | None, bsz: int,
    sdpa_gqa_with_batch_mask: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d)) V of one decode token over the first ``kv_seq_len`` cache rows, for any batch;
    the signature and return of Unsloth's ``_decode_attention_core`` (A [bsz, n_heads, 1, head_dim], K, V)."""
    sliding_window = getattr(attn.config, "sliding_window", None)
    has_window = sliding_window is not None and kv_seq_len > sliding_window
    if has_window or attn.__dict__.get("_unsloth_tp_heads") is not None:
        # Windows and tensor-parallel head splits: Unsloth's own code, as it was.
        from unsloth.models import llama

        return getattr(llama, _ORIGINAL_CORE)(attn, Qn, kv_seq_len, attention_mask, bsz, sdpa_gqa_with_batch_mask)
    K = attn.paged_attention_K[:kv_seq_len].permute(1, 2, 0, 3)  # [bsz, n_kv_heads, kv_len, head_dim], a view
    V = attn.paged_attention_V[:kv_seq_len].permute(1, 2, 0, 3)
    scores = attn.attention[:, :, :, :kv_seq_len]  # the layer's persistent [bsz, n_heads, 1, rows] buffer
    Qn *= attn.scalar  # before the product, as Unsloth's batch-of-one step does (keeps bf16 scores in range)
    grouped_scores(Qn, K, scores)
    if attention_mask is not None:
        keep = attention_mask
        if keep.dim() == 2:
            keep = keep[:, None, None, :]
        if keep.dtype != torch.bool:
            keep = keep.eq(0) if keep.is_floating_point() else keep.bool()  # additive 0 = keep; 2-D 1 = keep
        scores.masked_fill_(~keep[..., :kv_seq_len], float("-inf"))
    scores.copy_(torch.softmax(scores, dim=-1, dtype=torch.float32))
    return grouped_values(scores, V, Qn), K, V


def grouped_scores(Q: torch.Tensor, K: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Q K^T into ``out`` [bsz, n_heads, 1, kv_len]: Q [bsz, n_heads, 1, d] viewed as [bsz * n_kv_heads, groups, d]
    against K [bsz, n_kv_heads, kv_len, d] read in place (a strided batch of matrices, never repeated)."""
    bsz, n_heads, _, head_dim = Q.shape
    n_kv_heads, kv_len = K.shape[1], K.shape[2]
    groups = n_heads // n_kv_heads
    torch.bmm(Q.reshape(bsz * n_kv_heads, groups, head_dim), K.reshape(bsz * n_kv_heads, kv_len, head_dim).mT,
              out=out.view(bsz * n_kv_heads, groups, kv_len))
    return out


def grouped_values(P: torch.Tensor, V: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """P V into ``out`` [bsz, n_heads, 1, d], grouped as ``grouped_scores``. cuBLAS takes a slow kernel when the
    reduction over the cache is not a multiple of 8: the aligned prefix is one product, the rest added on top."""
    bsz, n_heads, _, kv_len = P.shape
    n_kv_heads, head_dim = V.shape[1], V.shape[3]
    groups = n_heads // n_kv_heads
    P = P.view(bsz * n_kv_heads, groups, kv_len)
    V = V.reshape(bsz * n_kv_heads, kv_len, head_dim)
    grouped_out = out.view(bsz * n_kv_heads, groups, head_dim)
    aligned = kv_len - kv_len % 8
    if aligned in (0, kv_len):
        torch.bmm(P, V, out=grouped_out)
    else:
        torch.bmm(P[:, :, :aligned], V[:, :aligned], out=grouped_out)
        grouped_out.baddbmm_(P[:, :, aligned:], V[:, aligned:])
    return out


def install_grouped_decode_attention() -> bool:
    """Make Unsloth's decode step (Llama, Qwen2 and Qwen3 attention) use ``decode_attention_core``.

    Returns False when Unsloth or its decode core is not there (CPU machines without the GPU path, another
    version): generation then runs Unsloth's own core, unchanged."""
    try:
        from unsloth.models import llama
    except Exception:  # no Unsloth, or one that cannot load here: nothing to patch
        return False
    if not hasattr(llama, "_decode_attention_core"):
        return False
    if not hasattr(llama, _ORIGINAL_CORE):
        setattr(llama, _ORIGINAL_CORE, llama._decode_attention_core)
    llama._decode_attention_core = decode_attention_core
    try:  # Qwen3's module holds its own reference, imported from llama
        from unsloth.models import qwen3
    except Exception:
        return True
    if hasattr(qwen3, "_decode_attention_core"):
        qwen3._decode_attention_core = decode_attention_core
    return True


def uninstall_grouped_decode_attention() -> None:
    """Unsloth's own decode core again (benchmarks compare the two in one process). Captured decode graphs
    must be dropped after a switch (``unsloth.models._decode_graphs.release``): a graph captured with one core
    copies or does not copy its output by what that core returned."""
    try:
        from unsloth.models import llama
    except Exception:  # nothing was installed where Unsloth's GPU path cannot load
        return
    original = getattr(llama, _ORIGINAL_CORE, None)
    if original is None:
        return
    llama._decode_attention_core = original
    try:
        from unsloth.models import qwen3
    except Exception:
        return
    if hasattr(qwen3, "_decode_attention_core"):
        qwen3._decode_attention_core = original
