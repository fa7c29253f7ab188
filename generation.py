"""How the trainer and the eval generate under Unsloth: the decode step's attention.

    generation.install_grouped_decode_attention()     # once, after `import unsloth`; idempotent

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

from typing import Any

import torch

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
    O = out.view(bsz * n_kv_heads, groups, head_dim)
    aligned = kv_len - kv_len % 8
    if aligned in (0, kv_len):
        torch.bmm(P, V, out=O)
    else:
        torch.bmm(P[:, :, :aligned], V[:, :aligned], out=O)
        O.baddbmm_(P[:, :, aligned:], V[:, aligned:])
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
