"""The vLLM path of the eval, with vLLM scripted: the same episodes as the native path (prompts, stop rule, turn
closing, parsing), whether or not vLLM keeps the stop token; the clear error without vLLM; the merged folder it
serves."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch

from chat_format import tool_call_text
from eval.checkpoint import load_checkpoint
from eval.model_policy import generation_summary
from eval.runner import StopReason, play_split
from eval.vllm_policy import MISSING_VLLM, VLLMPolicy, served_folder, vllm_available
from models import save_tool_token_rows
from policies import OraclePolicy
from prompt import system_prompt
from spider_data import SpiderSplit, to_grpo_rows


class SamplingParams:
    def __init__(self, **settings: Any) -> None:
        self.settings = settings


@pytest.fixture
def scripted_vllm(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A stand-in ``vllm`` module: only what VLLMPolicy imports from it."""
    module = ModuleType("vllm")
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


class OracleWritingEngine:
    """A vLLM engine that writes the oracle's next call for each context, and "Done." once the plan is over, and
    stops as vLLM does: at the first stop id, which it keeps in ``token_ids`` or not (``keeps_stop``)."""

    def __init__(self, tokenizer: Any, rows: list[dict[str, Any]], *, keeps_stop: bool, cut_after: int | None = None):
        self.tokenizer = tokenizer
        self.plans = {row["question"]: OraclePolicy().plan(row) for row in rows}
        self.keeps_stop = keeps_stop
        self.cut_after = cut_after  # a max_tokens that cuts every turn: finish_reason "length"
        self.sampling: list[dict[str, Any]] = []
        self.written: list[list[int]] = []  # every context with its turn: what a prefix cache holds

    def generate(self, prompts: list[dict[str, list[int]]], sampling: SamplingParams, *, use_tqdm: bool) -> list[Any]:
        self.sampling.append(sampling.settings)
        stop_ids = sampling.settings["stop_token_ids"]
        outputs = []
        for prompt in prompts:
            text = self.tokenizer.decode(prompt["prompt_token_ids"])
            question = text.split("<|im_start|>user\n")[1].split("\n\nTables in this database")[0]
            plan, turn = self.plans[question], text.count("<tool_response>")
            call = plan[turn] if turn < len(plan) else None
            written = (tool_call_text(call.name, call.arguments) if call else "Done.") + "<|im_end|>"
            ids = self.tokenizer.encode(written, add_special_tokens=False)
            if self.cut_after is not None:
                sample = SimpleNamespace(token_ids=ids[: self.cut_after], finish_reason="length", stop_reason=None)
            else:
                end = next(position for position, token in enumerate(ids) if token in stop_ids)
                stopped_by = ids[end]
                eos = stopped_by == self.tokenizer.eos_token_id
                sample = SimpleNamespace(token_ids=ids[: end + 1] if self.keeps_stop else ids[:end],
                                         finish_reason="stop", stop_reason=None if eos else stopped_by)
            context = prompt["prompt_token_ids"]
            cached = max((common_prefix(context, earlier) for earlier in self.written), default=0)
            self.written.append(context + list(sample.token_ids))
            outputs.append(SimpleNamespace(outputs=[sample], num_cached_tokens=cached))
        return outputs


def common_prefix(ids: list[int], other: list[int]) -> int:
    return next((position for position, (a, b) in enumerate(zip(ids, other)) if a != b), min(len(ids), len(other)))


def policy_on(engine: OracleWritingEngine, tokenizer: Any, tiny_model_dir: Path, **options: Any) -> VLLMPolicy:
    from transformers import AutoConfig, GenerationConfig

    return VLLMPolicy(engine, tokenizer, config=AutoConfig.from_pretrained(tiny_model_dir),
                      generation_config=GenerationConfig.from_pretrained(tiny_model_dir), **options)


@pytest.mark.parametrize("keeps_stop", [True, False], ids=["stop id kept", "stop id dropped"])
def test_vllm_turns_play_the_episodes_the_native_path_plays(scripted_vllm: ModuleType, tokenizer: Any,
                                                            tiny_model_dir: Path, builtin_sample: SpiderSplit,
                                                            keeps_stop: bool) -> None:
    engine = OracleWritingEngine(tokenizer, to_grpo_rows(builtin_sample.examples, system_prompt(10)),
                                 keeps_stop=keeps_stop)
    policy = policy_on(engine, tokenizer, tiny_model_dir, max_new_tokens=64)
    records = play_split(builtin_sample, policy, batch_size=4, progress=False)
    oracle = play_split(builtin_sample, OraclePolicy(), progress=False)
    assert [record.correct for record in records] == [True] * len(records)
    assert [record.steps for record in records] == [record.steps for record in oracle]
    assert {(record.stop_reason, record.final_text) for record in records} == {(StopReason.NO_TOOL_CALL.value, "Done.")}
    # The stop rule reaches vLLM: the end of turn and </tool_call>, greedy, the turn's budget.
    end_of_call = tokenizer.convert_tokens_to_ids("</tool_call>")
    assert engine.sampling[0] == {"max_tokens": 64, "stop_token_ids": policy.stop_ids, "skip_special_tokens": False,
                                  "temperature": 0.0}
    assert end_of_call in policy.stop_ids
    assert all(call.continuous for call in policy.generation_calls)
    # Each turn after the first reads its conversation so far from the prefix cache: the report says how much.
    calls = policy.generation_calls
    assert calls[0].cached_context_tokens > 0  # the system prompt and tools, shared by every question
    assert sum(call.cached_context_tokens for call in calls[1:]) / sum(call.context_tokens for call in calls[1:]) > 0.9
    assert 0 < generation_summary(calls, elapsed_s=1.0)["prefix_cache_hit_rate"] < 1


def test_a_turn_vllm_cut_at_the_budget_is_truncated_not_malformed(scripted_vllm: ModuleType, tokenizer: Any,
                                                                   tiny_model_dir: Path,
                                                                   builtin_sample: SpiderSplit) -> None:
    engine = OracleWritingEngine(tokenizer, to_grpo_rows(builtin_sample.examples, system_prompt(10)),
                                 keeps_stop=True, cut_after=5)
    records = play_split(builtin_sample, policy_on(engine, tokenizer, tiny_model_dir, max_new_tokens=5),
                         batch_size=4, progress=False)
    assert {record.stop_reason for record in records} == {StopReason.TRUNCATED.value}


def test_sampling_asks_vllm_for_the_temperature_and_seed(scripted_vllm: ModuleType, tokenizer: Any,
                                                         tiny_model_dir: Path, builtin_sample: SpiderSplit) -> None:
    engine = OracleWritingEngine(tokenizer, to_grpo_rows(builtin_sample.examples, system_prompt(10)),
                                 keeps_stop=True)
    policy = policy_on(engine, tokenizer, tiny_model_dir, max_new_tokens=64, temperature=0.7, seed=3)
    play_split(builtin_sample, policy, batch_size=4, progress=False)
    assert {key: engine.sampling[0].get(key) for key in ("temperature", "seed", "top_k", "top_p")} == {
        "temperature": 0.7, "seed": 3, "top_k": None, "top_p": None}  # vLLM's defaults: every token


@pytest.mark.skipif(vllm_available(), reason="vLLM is installed here")
def test_backend_vllm_without_vllm_is_a_clear_usage_error(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    from eval.__main__ import run

    with pytest.raises(SystemExit) as exit_info:
        run(["--checkpoint", str(tiny_model_dir), "--backend", "vllm", "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert MISSING_VLLM in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_vllm_serves_an_adapter_merged_with_its_tool_rows_from_a_folder_that_goes_away(tiny_model_dir: Path,
                                                                                         tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(0)
    lora = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    adapter = tmp_path / "adapter"
    lora.save_pretrained(adapter)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.save_pretrained(adapter)
    tags = torch.tensor([tokenizer.convert_tokens_to_ids(tag) for tag in ("<tool_call>", "</tool_call>")])
    rows = torch.randn(2, base.config.hidden_size)
    save_tool_token_rows(adapter, {"indices": tags, "embed_tokens": rows})

    with served_folder(tiny_model_dir) as folder:
        assert folder == tiny_model_dir  # a full model folder is served as it is
    with served_folder(adapter) as folder:
        served = AutoModelForCausalLM.from_pretrained(folder)
        assert (folder / "tokenizer_config.json").is_file()
        temporary = folder
    assert not temporary.exists()
    assert torch.equal(served.get_input_embeddings().weight[tags], rows)  # the warm-up's tag rows are in
    merged, _ = load_checkpoint(adapter, device="cpu")
    untrained = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.allclose(served(ids).logits, merged(ids).logits, atol=1e-5)
        assert not torch.allclose(served(ids).logits, untrained(ids).logits, atol=1e-3)  # the LoRA is merged in
