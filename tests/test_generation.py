"""generation.py: the grouped decode attention computes what attention computes, for any batch and padding."""

from __future__ import annotations

import math
import sys
import types
from typing import Any

import pytest
import torch

import generation


def decode_layer(bsz: int, n_heads: int, n_kv_heads: int, head_dim: int, kv_len: int, rows: int, dtype: torch.dtype,
                 seed: int) -> tuple[types.SimpleNamespace, torch.Tensor]:
    """An attention module as Unsloth's decode step leaves it: a [rows, 2, bsz, kv_heads, head_dim] cache filled up
    to kv_len (the rest garbage), a scores buffer of ``rows`` columns, and the step's query in its buffer."""
    generator = torch.Generator().manual_seed(seed)
    paged = torch.randn(rows, 2, bsz, n_kv_heads, head_dim, generator=generator).to(dtype)
    paged[kv_len:] = float("nan")  # rows past the true length must never be read
    temp_qa = torch.randn(2, bsz, 1, n_heads * head_dim, generator=generator).to(dtype)
    query = temp_qa[0].view(bsz, 1, n_heads, head_dim).transpose(1, 2)  # how Unsloth views Q: [bsz, heads, 1, d]
    attn = types.SimpleNamespace(
        config=types.SimpleNamespace(sliding_window=None), paged_attention_K=paged[:, 0], paged_attention_V=paged[:, 1],
        attention=torch.empty(bsz, n_heads, 1, rows, dtype=dtype), scalar=1 / math.sqrt(head_dim))
    return attn, query


def reference(attn: types.SimpleNamespace, query: torch.Tensor, kv_len: int, keep: torch.Tensor | None) -> torch.Tensor:
    """Plain attention in float64, every KV head repeated for its query heads."""
    K = attn.paged_attention_K[:kv_len].permute(1, 2, 0, 3).double()
    V = attn.paged_attention_V[:kv_len].permute(1, 2, 0, 3).double()
    groups = query.shape[1] // K.shape[1]
    K, V = K.repeat_interleave(groups, dim=1), V.repeat_interleave(groups, dim=1)
    scores = query.double() @ K.transpose(2, 3) * attn.scalar
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1) @ V


@pytest.mark.parametrize("bsz, n_heads, n_kv_heads, head_dim, kv_len", [
    (6, 14, 2, 64, 37),     # Qwen2.5-0.5B's heads; a length that is not a multiple of 8
    (5, 16, 8, 128, 64),    # Qwen3-1.7B's heads
    (1, 14, 2, 64, 20),     # one row
])
@pytest.mark.parametrize("padded", [False, True])
def test_grouped_decode_attention_matches_attention(bsz: int, n_heads: int, n_kv_heads: int, head_dim: int,
                                                    kv_len: int, padded: bool) -> None:
    attn, query = decode_layer(bsz, n_heads, n_kv_heads, head_dim, kv_len, rows=kv_len + 11, dtype=torch.float32,
                               seed=kv_len)
    keep = None
    if padded:  # left padding: row r starts r tokens late (TRL pads a call's prompts to the longest)
        keep = torch.ones(bsz, 1, 1, kv_len, dtype=torch.bool)
        for row in range(bsz):
            keep[row, ..., :row] = False
    expected = reference(attn, query, kv_len, keep)
    out, K, V = generation.grouped_decode_attention(attn, query, kv_len, keep, bsz, True)
    assert out.shape == (bsz, n_heads, 1, head_dim)
    assert out.data_ptr() == query.data_ptr()  # written into the query's buffer, which the graph segments read
    assert K.shape == V.shape == (bsz, n_kv_heads, kv_len, head_dim)
    error = (out.double() - expected).norm() / expected.norm()
    assert error < 1e-5, error


def test_grouped_decode_attention_in_bf16_stays_within_bf16_rounding() -> None:
    attn, query = decode_layer(8, 14, 2, 64, 300, rows=512, dtype=torch.bfloat16, seed=1)
    keep = torch.ones(8, 1, 1, 300, dtype=torch.bool)
    keep[3, ..., :120] = False
    expected = reference(attn, query, 300, keep)
    out, _, _ = generation.grouped_decode_attention(attn, query, 300, keep, 8, True)
    error = (out.double() - expected).norm() / expected.norm()
    assert error < 1e-2, error
    assert not out.isnan().any()


@pytest.mark.parametrize("mask_form", ["additive", "two_d"])
def test_grouped_decode_attention_reads_every_mask_form(mask_form: str) -> None:
    """Unsloth's eager path can hand an additive float mask (0 = keep) or the 2-D 0/1 mask of generate()."""
    bsz, kv_len = 3, 16
    keep = torch.ones(bsz, 1, 1, kv_len, dtype=torch.bool)
    keep[1, ..., :5] = False
    attn, query = decode_layer(bsz, 4, 2, 8, kv_len, rows=kv_len, dtype=torch.float32, seed=3)
    expected = reference(attn, query, kv_len, keep)
    if mask_form == "additive":
        mask = torch.zeros(bsz, 1, 1, kv_len).masked_fill(~keep, torch.finfo(torch.float32).min)
    else:
        mask = keep[:, 0, 0, :].long()
    out, _, _ = generation.grouped_decode_attention(attn, query, kv_len, mask, bsz, True)
    assert torch.allclose(out.double(), expected, atol=1e-5)


def test_install_without_unsloths_gpu_path_changes_nothing() -> None:
    """On a machine where Unsloth's GPU modules cannot load (no triton: this CPU machine) install says so."""
    try:
        from unsloth.models import llama  # noqa: F401
    except Exception:
        assert generation.install_grouped_decode_attention() is False
        generation.uninstall_grouped_decode_attention()  # and undoing nothing is no error
    else:
        pytest.skip("Unsloth's GPU path loads here; the install is exercised by benchmarks/decode_step.py")


@pytest.mark.parametrize("grouped", [True, False])
def test_training_and_the_eval_prepare_the_decode_attention_alike(monkeypatch: pytest.MonkeyPatch,
                                                                  grouped: bool) -> None:
    """One home for the decode path: under Unsloth the attention core is chosen there for training (prepare_model)
    and the eval (load_with_unsloth) alike, never left as an earlier model in the process set it."""
    chosen: list[str] = []
    monkeypatch.setattr(generation, "install_grouped_decode_attention", lambda: chosen.append("grouped") or True)
    monkeypatch.setattr(generation, "uninstall_grouped_decode_attention", lambda: chosen.append("unsloth"))
    monkeypatch.setattr(generation, "allow_unsloth_decode_graphs", lambda model_type, enabled: None)
    model = torch.nn.Linear(2, 2)
    model.config = types.SimpleNamespace(model_type="qwen2")  # type: ignore[assignment]
    monkeypatch.setattr(generation, "read_lm_head_input_contiguously", lambda model: None)
    generation.prepare_decoding(model, "unsloth", grouped_attention=grouped)
    generation.prepare_decoding(model, "transformers", grouped_attention=grouped)  # Unsloth's core only
    settings = types.SimpleNamespace(stop_at_tool_call=False, backend="unsloth", decode_graphs=True,
                                     grouped_decode_attention=grouped)
    generation.prepare_model(model, None, settings)  # type: ignore[arg-type]
    assert chosen == ["grouped" if grouped else "unsloth"] * 2


def fake_unsloth_llama(monkeypatch: pytest.MonkeyPatch, original: object) -> None:
    """Unsloth's llama module as far as generation.py reads it: its decode core, saved before the install."""
    llama = types.ModuleType("unsloth.models.llama")
    setattr(llama, generation._ORIGINAL_CORE, original)
    models = types.ModuleType("unsloth.models")
    models.llama = llama  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "unsloth.models", models)
    monkeypatch.setitem(sys.modules, "unsloth.models.llama", llama)


def test_an_unpadded_batch_takes_unsloths_core_and_lands_in_the_query_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """No mask: Unsloth's SDPA call (faster there); its fresh result is copied where the grouped one would be, so a
    decode graph captured on a padded call reads the right buffer on an unpadded one too."""
    attn, query = decode_layer(4, 14, 2, 64, 30, rows=40, dtype=torch.float32, seed=5)
    expected = reference(attn, query, 30, None)
    calls = []

    def unsloth_core(attn, Qn, kv_seq_len, attention_mask, bsz, gqa):  # noqa: ANN001, ANN202  (Unsloth's signature)
        calls.append(attention_mask)
        return reference(attn, Qn, kv_seq_len, None).float(), None, None

    fake_unsloth_llama(monkeypatch, unsloth_core)
    out, _, _ = generation.decode_attention_core(attn, query, 30, None, 4, True)
    assert calls == [None]
    assert out.data_ptr() == query.data_ptr()
    assert torch.allclose(out.double(), expected, atol=1e-5)


def test_a_padded_batch_takes_the_grouped_products(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_unsloth_llama(monkeypatch, lambda *args: pytest.fail("Unsloth's core ran for a padded batch"))
    attn, query = decode_layer(4, 14, 2, 64, 30, rows=40, dtype=torch.float32, seed=6)
    keep = torch.ones(4, 1, 1, 30, dtype=torch.bool)
    keep[2, ..., :7] = False
    expected = reference(attn, query, 30, keep)
    out, _, _ = generation.decode_attention_core(attn, query, 30, keep, 4, True)
    assert torch.allclose(out.double(), expected, atol=1e-5)


def test_trl_generation_is_wrapped_caps_inside_closing_inside_timing() -> None:
    """wrap_trainer's stated order: the innermost call (TRL's) decodes under the turn cap; the closing adds
    <|im_end|> to a turn cut at </tool_call>; the timer, outermost, sees the turns as TRL will train on them."""
    import models

    tokenizer = models.build_qwen3_tokenizer()
    call = tokenizer.encode('<tool_call>\n{"name": "describe", "arguments": {"table": "t"}}\n</tool_call>',
                            add_special_tokens=False)
    seen: dict[str, Any] = {}

    class FakeTrainer:
        generation_config = types.SimpleNamespace(max_new_tokens=512)
        max_completion_length = 512

        def _generate_single_turn(self, prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> Any:
            seen["max_new_tokens"] = self.generation_config.max_new_tokens
            return [list(call) for _ in prompt_ids], None

    def timer(generate_turn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            completions, logprobs = generate_turn(*args, **kwargs)
            seen["timed"] = completions
            return completions, logprobs
        return timed

    settings = types.SimpleNamespace(stop_at_tool_call=True, cap_turns_at_budget=True, max_turn_tokens=64,
                                     fast_inference=False, generation_mode_per_rollout=False,
                                     merged_generation=False)
    trainer = FakeTrainer()
    assert generation.wrap_trainer(trainer, tokenizer, settings, timer) == list(generation.TURN_WRAPPERS)
    completions, _ = trainer._generate_single_turn([[1, 2, 3]], None, {})
    assert seen["max_new_tokens"] == 64  # the cap applied inside, around TRL's own call
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert seen["timed"] == completions == [[*call, end_of_turn]]  # closed before the timer saw it
    assert trainer.generation_config.max_new_tokens == 512  # and the trainer's own cap given back


def test_a_closed_turn_keeps_vllms_logprobs_in_line_with_its_tokens() -> None:
    """Under vLLM a turn comes with one sampling log-probability a token; the <|im_end|> added after </tool_call>
    gets NaN, so TRL's by-position join of the turns stays aligned and TRL's importance-sampling correction leaves
    the token vLLM never sampled alone."""
    import models

    tokenizer = models.build_qwen3_tokenizer()
    call = tokenizer.encode('<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT 1"}}\n</tool_call>',
                            add_special_tokens=False)
    answer = tokenizer.encode("The answer is 1.<|im_end|>", add_special_tokens=False)
    sampled = [[-0.5] * len(call), [-0.25] * len(answer)]

    class FakeTrainer:
        def _generate_single_turn(self, prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> Any:
            return [list(call), list(answer)], [list(row) for row in sampled]

    trainer = FakeTrainer()
    generation.close_turns_at_tool_call_end(trainer, tokenizer)
    completions, logprobs = trainer._generate_single_turn([[1], [2]])
    assert [len(row) for row in logprobs] == [len(ids) for ids in completions] == [len(call) + 1, len(answer)]
    assert logprobs[0][:-1] == sampled[0] and math.isnan(logprobs[0][-1])  # only the added token's is new
    assert logprobs[1] == sampled[1]
    assert generation.logprobs_for_added_tokens(None, completions) is None  # the native path has none


def test_vllm_is_handed_the_stop_rules_ids_beside_the_users_own() -> None:
    kwargs = {"stop_token_ids": [7], "top_k": 20}
    assert generation.with_vllm_stop_ids(kwargs, [151645, 7, 151658]) == {"stop_token_ids": [7, 151645, 151658],
                                                                          "top_k": 20}
    assert kwargs == {"stop_token_ids": [7], "top_k": 20}  # the config's own dict is left as it was
    assert generation.with_vllm_stop_ids(None, [2]) == {"stop_token_ids": [2]}


def test_settings_that_turn_a_wrapper_off_leave_it_out() -> None:
    class FakeTrainer:
        def _generate_single_turn(self, prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> Any:
            return [[7] for _ in prompt_ids], None

    settings = types.SimpleNamespace(stop_at_tool_call=False, cap_turns_at_budget=False, max_turn_tokens=0,
                                     fast_inference=False, generation_mode_per_rollout=False,
                                     merged_generation=False)
    trainer = FakeTrainer()
    assert generation.wrap_trainer(trainer, None, settings) == []
    assert trainer._generate_single_turn([[1]]) == ([[7]], None)


def test_the_lm_head_reads_a_strided_decode_input_as_one_matrix_product() -> None:
    class TinyLM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = torch.nn.Linear(16, 50, bias=False).requires_grad_(False)  # frozen, as under LoRA

        def get_output_embeddings(self) -> torch.nn.Module:
            return self.head

    model = TinyLM()
    hidden = torch.randn(8, 5, 16)[:, -1:, :]  # a decode step's rows as a view of a longer buffer
    assert not hidden.is_contiguous()

    def operators(inputs: torch.Tensor) -> tuple[set[str], torch.Tensor]:
        with torch.profiler.profile() as profile, torch.inference_mode():  # as a decode step runs
            logits = model.head(inputs)
        return {event.key for event in profile.key_averages()}, logits

    before, expected = operators(hidden)
    assert "aten::bmm" in before  # the weight broadcast to every row: read once per row
    assert generation.read_lm_head_input_contiguously(model)
    assert generation.read_lm_head_input_contiguously(model)  # a second call adds no second hook
    assert len(model.head._forward_pre_hooks) == 1
    after, logits = operators(hidden)
    assert "aten::bmm" not in after and "aten::mm" in after
    torch.testing.assert_close(logits, expected)
    assert not generation.read_lm_head_input_contiguously(torch.nn.Linear(2, 2))
