"""The supervised warm-up (sft.py, `train.py --phase sft`) and the runs that start from it."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402  (imports unsloth first, as train.py must)
import sft  # noqa: E402, I001  (after train: it loads transformers)
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows  # noqa: E402
from models import build_qwen3_tokenizer, build_tiny_qwen3  # noqa: E402
from chat_format import masked_chat_template, tool_token_ids  # noqa: E402
from prompt import CLOSING_MESSAGE, system_prompt  # noqa: E402
from policies import UNTRAINED_TURN  # noqa: E402
from fewshot import training_questions  # noqa: E402
from output_folders import save_warmup_questions, warmup_questions  # noqa: E402
from spider_data import question_key  # noqa: E402



@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return to_grpo_rows(load_split(BUILTIN_DATA_DIR, "train", progress=False).usable()[:4], system_prompt(10))


def trained_text(tokenizer: Any, encoded: sft.EncodedConversation) -> list[str]:
    """The trained tokens, decoded run by run."""
    runs, current = [], []
    for token, is_trained in zip(encoded.input_ids, encoded.is_assistant, strict=True):
        if is_trained:
            current.append(token)
        elif current:
            runs.append(tokenizer.decode(current))
            current = []
    return runs


def test_only_what_the_model_generates_is_trained(rows: list[dict[str, Any]]) -> None:
    tokenizer = build_qwen3_tokenizer()
    conversation = sft.oracle_conversations(rows[:1], step_budget=10)[0]
    encoded = sft.encode_conversation(tokenizer, conversation, masked_chat_template(tokenizer))
    runs = trained_text(tokenizer, encoded)
    calls = [message["tool_calls"][0]["function"] for message in conversation if message.get("tool_calls")]
    assert len(runs) == len(calls) + 1  # one run per tool call, then the closing turn
    for run, call in zip(runs, calls, strict=False):
        assert run.startswith("<tool_call>\n") and run.endswith("</tool_call><|im_end|>")
        assert json.loads(run.removeprefix("<tool_call>\n").removesuffix("\n</tool_call><|im_end|>")) == call
    assert runs[-1] == CLOSING_MESSAGE + "<|im_end|>"
    assert "<think>" not in "".join(runs)  # the generation prompt holds the empty think block; it is not trained


def test_a_deliberate_mistake_is_context_and_its_recovery_is_trained(rows: list[dict[str, Any]]) -> None:
    tokenizer = build_qwen3_tokenizer()
    template = masked_chat_template(tokenizer)
    conversation = next(c for c in sft.oracle_conversations(rows, step_budget=10, retry_share=1.0)
                        if any(message.get(UNTRAINED_TURN) for message in c))
    queries = [message["tool_calls"][0]["function"]["arguments"]["sql"] for message in conversation
               if message.get("tool_calls") and message["tool_calls"][0]["function"]["name"] == "query"]
    assert len(queries) == 2  # the wrong column first, then the gold query
    trained = "".join(trained_text(tokenizer, sft.encode_conversation(tokenizer, conversation, template)))
    assert json.dumps(queries[1]) in trained and json.dumps(queries[0]) not in trained
    assert "no such column" in "".join(str(message["content"]) for message in conversation)
    plain = [{key: value for key, value in message.items() if key != UNTRAINED_TURN} for message in conversation]
    assert json.dumps(queries[0]) in "".join(trained_text(tokenizer, sft.encode_conversation(tokenizer, plain,
                                                                                             template)))


def test_a_template_that_merges_assistant_turns_is_refused(rows: list[dict[str, Any]]) -> None:
    tokenizer = build_qwen3_tokenizer()
    conversation = sft.oracle_conversations(rows[:1], step_budget=10)[0]
    merged = ("{% for message in messages %}{% if message.role == 'assistant' %}{% generation %}"
              "{{ message.content }}x{% endgeneration %}{% else %}{{ message.content }}{% endif %}{% endfor %}")
    with pytest.raises(ValueError, match="assistant turns"):
        sft.encode_conversation(tokenizer, conversation[:2] + conversation[2:3] + conversation[2:3], merged)


def test_oracle_episodes_end_after_the_answer_unless_the_habit_is_asked_for(rows: list[dict[str, Any]]) -> None:
    def calls_after_answer(conversation: list[dict[str, Any]]) -> int:
        names = [message["tool_calls"][0]["function"]["name"] for message in conversation if message.get("tool_calls")]
        return len(names) - names.index("answer") - 1

    assert all(calls_after_answer(c) == 0 for c in sft.oracle_conversations(rows, step_budget=10))
    habit = sft.oracle_conversations(rows, step_budget=10, never_stop_share=1.0)
    assert all(calls_after_answer(c) > 0 for c in habit)
    assert all(c[-1] == {"role": "assistant", "content": CLOSING_MESSAGE} for c in habit)
    with pytest.raises(ValueError, match="add up to at most 1"):
        sft.oracle_conversations(rows, step_budget=10, never_stop_share=0.5, retry_share=0.6)


def test_learning_rate_warms_up_then_decays() -> None:
    factors = [sft.warmup_cosine(step, warmup_steps=2, total_steps=10) for step in range(10)]
    assert factors[0] == 0.5 and factors[1] == 1.0
    assert all(later <= earlier for earlier, later in itertools.pairwise(factors[1:]))
    assert factors[-1] > 0.1 - 1e-9


def test_warm_up_steps_draw_every_episode_once_a_pass_in_a_new_order() -> None:
    draws = sft.step_episodes(6, 4, seed=0)
    steps = [next(draws) for _ in range(3)]  # 12 episodes: two passes over the 6
    flat = [index for step in steps for index in step]
    assert sorted(flat[:6]) == sorted(flat[6:]) == list(range(6)) and flat[:6] != flat[6:]
    again = sft.step_episodes(6, 4, seed=0)
    assert [next(again) for _ in range(3)] == steps  # the same seed draws the same steps


def test_a_steps_micro_batches_group_episodes_of_like_length_and_keep_every_one() -> None:
    data = [sft.EncodedConversation([1] * length, [True] * length) for length in (50, 9, 48, 10, 30, 11, 31, 49)]
    picked = [7, 1, 4, 0, 3, 6, 2, 5]

    micro_batches = sft.length_sorted_micro_batches(picked, data, 3)

    assert micro_batches == [[1, 3, 5], [4, 6, 2], [7, 0]]
    padded = sum(len(micro) * max(len(data[index].input_ids) for index in micro) for micro in micro_batches)
    in_order = [picked[start : start + 3] for start in range(0, len(picked), 3)]
    assert padded < sum(len(micro) * max(len(data[index].input_ids) for index in micro) for micro in in_order)


def test_grouping_by_length_leaves_the_steps_loss_as_it_was(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    """The step divides the summed token loss by the step's tokens: which episodes share a micro-batch
    must not change it (right padding is masked out of attention and loss)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = build_tiny_qwen3(tmp_path / "tiny")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template = masked_chat_template(tokenizer)
    data = [sft.encode_conversation(tokenizer, c, template) for c in sft.oracle_conversations(rows, step_budget=10)]
    assert len({len(item.input_ids) for item in data}) > 1  # else the grouping could not matter

    def summed_loss(micro_batches: list[list[int]]) -> float:
        with torch.no_grad():
            return sum(sft.assistant_token_loss(model, [data[i] for i in micro], tokenizer.pad_token_id)[0].item()
                       for micro in micro_batches)

    picked = list(range(len(data)))
    sorted_loss = summed_loss(sft.length_sorted_micro_batches(picked, data, 2))
    assert sorted_loss == pytest.approx(summed_loss([[index] for index in picked]), rel=1e-5)


def test_sft_makes_the_oracle_calls_more_likely(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = build_tiny_qwen3(tmp_path / "tiny")
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template = masked_chat_template(tokenizer)
    data = [sft.encode_conversation(tokenizer, c, template) for c in sft.oracle_conversations(rows, step_budget=10)]

    def mean_loss() -> float:
        import torch

        with torch.no_grad():
            loss, tokens = sft.assistant_token_loss(model, data, tokenizer.pad_token_id)
        return loss.item() / tokens

    before = mean_loss()
    settings = sft.SFTSettings(epochs=8, learning_rate=3e-3, batch_size=4, micro_batch_size=2, warmup_steps=1, seed=0)
    history = sft.train_sft(model, data, settings, tokenizer.pad_token_id, log=lambda entry: None)
    assert len(history) == 8 and history[-1]["loss"] < history[0]["loss"]
    assert mean_loss() < before - 1.0  # nats per assistant token, on the very episodes it imitated


def test_the_warm_up_shows_a_bar_of_its_steps(tiny_model_dir: Path, rows: list[dict[str, Any]],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """SmolLM2's warm-up logs its first step and then nothing for minutes: a bar like the trainer's says where it is."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    template = masked_chat_template(tokenizer)
    data = [sft.encode_conversation(tokenizer, c, template) for c in sft.oracle_conversations(rows[:2], step_budget=10)]
    settings = sft.SFTSettings(epochs=3, learning_rate=1e-3, batch_size=2, micro_batch_size=2, warmup_steps=1, seed=0)
    sft.train_sft(model, data, settings, tokenizer.pad_token_id, log=lambda entry: None)
    shown = capsys.readouterr().err
    assert "warm-up (sft)" in shown and "3/3" in shown and "loss=" in shown
    sft.train_sft(model, data, settings, tokenizer.pad_token_id, log=lambda entry: None, progress=False)
    assert "warm-up (sft)" not in capsys.readouterr().err


def test_tag_loss_is_the_loss_of_the_tag_targets_alone(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = build_tiny_qwen3(tmp_path / "tiny")
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    data = [sft.encode_conversation(tokenizer, c, masked_chat_template(tokenizer))
            for c in sft.oracle_conversations(rows[:2], step_budget=10)]
    tag_ids = tool_token_ids(tokenizer)
    expected_count = sum(token in tag_ids for item in data
                         for token, trained in zip(item.input_ids[1:], item.is_assistant[1:], strict=True) if trained)
    tags = sft.TagLoss()
    with torch.no_grad():
        total, tokens = sft.assistant_token_loss(model, data, tokenizer.pad_token_id, tag_ids, tags)
    assert tags.count == expected_count > 0  # every oracle call opens and closes with a tag
    assert 0 < tags.loss < total.item()
    unwatched = sft.TagLoss()
    with torch.no_grad():
        sft.assistant_token_loss(model, data, tokenizer.pad_token_id, (), unwatched)
    assert unwatched.count == 0


TINY_MODEL = ""


@pytest.fixture(autouse=True)
def tiny_model(tiny_model_dir: Path) -> None:
    """These runs train the tiny random Qwen3 (embedded mode would pick SmolLM2 where it is fetched)."""
    global TINY_MODEL
    TINY_MODEL = str(tiny_model_dir)


def sft_argv(output_dir: Path, *extra: str) -> list[str]:
    return ["--phase", "sft", "--model", TINY_MODEL, "--output_dir", str(output_dir), "--max_questions", "3",
            "--sft_epochs", "1", "--sft_batch_size", "3", "--report_to", "none", *extra]


class StopBeforeTraining(Exception):
    pass


def test_easy_phase_starts_from_the_sft_adapter(tmp_path: Path) -> None:
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file

    adapter = train.main(sft_argv(tmp_path))
    assert adapter == tmp_path / "sft" / "adapter"
    saved = load_file(adapter / "adapter_model.safetensors")
    assert any(tensor.abs().sum() > 0 for name, tensor in saved.items() if "lora_B" in name)  # it trained
    steps = [json.loads(line) for line in (tmp_path / "sft" / "metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 1 and steps[0]["tool_tag_loss"] > 0  # the tags' own loss, logged beside the mean
    import models

    token_rows = models.tool_token_rows(adapter)  # --train_tool_tokens: the tags' rows, beside the LoRA
    assert token_rows["indices"].tolist() == [151657, 151658]
    assert set(token_rows) == {"indices", "embed_tokens"}  # the tiny Qwen3 is tied: one set of rows
    start = load_file(Path(TINY_MODEL) / "model.safetensors")["model.embed_tokens.weight"][[151657, 151658]]
    assert not token_rows["embed_tokens"].float().allclose(start.float())  # they trained
    seen: dict[str, Any] = {}

    def capture_and_stop(trainer: Any) -> None:
        seen.update(get_peft_model_state_dict(trainer.model))
        seen["rows"] = trainer.model.get_input_embeddings().weight[[151657, 151658]].detach().clone()
        raise StopBeforeTraining

    with pytest.raises(StopBeforeTraining):
        train.main(["--phase", "easy", "--model", TINY_MODEL, "--output_dir", str(tmp_path), "--start_adapter",
                    str(adapter), "--report_to", "none"], before_train=capture_and_stop)
    rows = seen.pop("rows")
    assert set(seen) == set(saved)  # GRPO trains the LoRA only; the token rows are in the base weights
    assert all(seen[name].float().allclose(saved[name].float()) for name in saved)
    assert rows.float().allclose(token_rows["embed_tokens"].float(), atol=1e-2)  # bf16 or float32 base weights


def test_a_grpo_phase_carries_the_warm_ups_token_rows_into_its_adapter_checkpoints_and_eval(tmp_path: Path) -> None:
    import models
    from eval.checkpoint import load_checkpoint

    sft_adapter = train.main(sft_argv(tmp_path))
    warm_rows = models.tool_token_rows(sft_adapter)
    easy = train.main(["--phase", "easy", "--model", TINY_MODEL, "--output_dir", str(tmp_path), "--start_adapter",
                       str(sft_adapter), "--report_to", "none", "--max_steps", "1", "--num_generations", "2",
                       "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2",
                       "--max_completion_length", "8", "--save_steps", "1"])
    checkpoint = easy.parent / "checkpoint-1"  # evaluated or started from like the adapter (the same files beside)
    warmed = warmup_questions(sft_adapter)
    assert len(warmed) == 3 and all("\t" in key for key in warmed)  # --max_questions 3: database, then question
    for folder in (easy, checkpoint):
        assert warmup_questions(folder) == warmed  # carried on, for --skip_warmup_questions of a later phase
        carried = models.tool_token_rows(folder)
        assert (folder / models.TOOL_TOKEN_ROWS_FILE).is_file(), folder
        assert carried["embed_tokens"].float().allclose(warm_rows["embed_tokens"].float())
        assert (folder / "question_history.json").is_file()
        assert json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"] == TINY_MODEL
        model, _ = load_checkpoint(folder, device="cpu")
        assert model.get_input_embeddings().weight[carried["indices"]].float().allclose(carried["embed_tokens"].float())


def test_full_finetune_saves_a_model_that_later_phases_take_as_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = train.main(sft_argv(tmp_path, "--sft_full_finetune"))
    assert model_dir == tmp_path / "sft" / "model"
    assert (model_dir / "config.json").is_file() and (model_dir / "tokenizer_config.json").is_file()
    capsys.readouterr()
    train.main(["--phase", "easy", "--model", str(model_dir), "--output_dir", str(tmp_path / "next"), "--dry-run"])
    assert f"EMBEDDED MODE (no CUDA GPU): {model_dir}," in capsys.readouterr().out  # the embedded mode keeps it


def test_a_phase_skips_the_warm_ups_questions_and_says_how_many_it_could_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = train.parse_config(["--max_questions", "4"])[0]
    every = [question_key(e.db_id, e.question) for e in training_questions(agent, ["easy"], 0,
                                                                           hold_out_examples=True)[0]]
    agent = train.parse_config([])[0]
    pool = [question_key(e.db_id, e.question) for e in training_questions(agent, ["easy"], 0,
                                                                          hold_out_examples=True)[0]]
    agent = train.parse_config(["--max_questions", "4"])[0]
    drawn = [question_key(e.db_id, e.question) for e in training_questions(
        agent, ["easy"], 0, hold_out_examples=True, seen=frozenset(every))[0]]
    assert len(drawn) == 4 and not set(drawn) & set(every)  # four others were there to draw
    most = frozenset(pool[:-2])
    drawn = [question_key(e.db_id, e.question) for e in training_questions(
        agent, ["easy"], 0, hold_out_examples=True, seen=most)[0]]
    assert drawn[:2] == pool[-2:] and len(drawn) == 4 and set(drawn[2:]) <= most  # the unseen first, then a fill

    adapter = tmp_path / "sft" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": TINY_MODEL}))
    (adapter / "adapter_model.safetensors").write_bytes(b"")  # --dry-run stops before any weight is read
    with pytest.raises(train.SetupError, match="recorded its questions"):  # a warm-up from before the file
        train.main(["--output_dir", str(tmp_path), "--model", TINY_MODEL, "--start_adapter", str(adapter),
                    "--skip_warmup_questions", "--dry-run"])
    save_warmup_questions(adapter, set(pool[:-2]))
    train.main(["--output_dir", str(tmp_path), "--model", TINY_MODEL, "--start_adapter", str(adapter),
                "--skip_warmup_questions", "--max_questions", "4", "--dry-run"])
    assert "2 of them trained in the warm-up (--skip_warmup_questions)" in capsys.readouterr().out


def test_a_missing_start_adapter_is_reported_before_loading_a_model(tmp_path: Path) -> None:
    with pytest.raises(train.SetupError, match="run `python train.py --phase sft` first"):
        train.main(["--output_dir", str(tmp_path), "--model", TINY_MODEL, "--start_adapter",
                    str(tmp_path / "sft" / "adapter"), "--dry-run"])


@pytest.mark.parametrize("tied", [True, False])
def test_tag_rows_start_as_the_models_own_and_train_where_a_lora_cannot(
        tmp_path: Path, rows: list[dict[str, Any]], tied: bool) -> None:
    """The warm-up's own tag rows: the same function as the model until they train, then the only thing
    that moves the tags' loss when every model weight is frozen (untied is the Qwen2.5-Coder 0.5B's case)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(build_tiny_qwen3(tmp_path / "tiny"), tie_word_embeddings=tied)
    model.requires_grad_(False)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "tiny")
    data = [sft.encode_conversation(tokenizer, c, masked_chat_template(tokenizer))
            for c in sft.oracle_conversations(rows[:2], step_budget=10)]
    tag_ids = tool_token_ids(tokenizer)
    tag_rows = sft.ToolTagRows(model, tag_ids)
    assert tag_rows.tied is tied and (tag_rows.head_rows is None) is tied

    def losses(with_rows: bool) -> tuple[float, float]:
        tags = sft.TagLoss()
        with torch.no_grad():
            total, tokens = sft.assistant_token_loss(model, data, tokenizer.pad_token_id, tag_ids, tags,
                                                     tag_rows if with_rows else None)
        return total.item() / tokens, tags.loss / tags.count

    assert losses(True) == pytest.approx(losses(False), rel=1e-5)  # untrained rows: the model's own function
    settings = sft.SFTSettings(epochs=6, learning_rate=1e-2, batch_size=2, micro_batch_size=2, warmup_steps=1, seed=0)
    history = sft.train_sft(model, data, settings, tokenizer.pad_token_id, lambda entry: None, tag_ids, tag_rows)
    assert history[-1]["tool_tag_loss"] < history[0]["tool_tag_loss"] - 1.0  # nats, with the model frozen
    saved = tag_rows.saved_rows()
    assert saved["indices"].tolist() == tag_ids and ("lm_head" in saved) is not tied
    assert losses(True)[1] < losses(False)[1] - 1.0


def test_the_warm_up_moves_a_cpu_loaded_model_onto_the_gpu_only_when_it_may(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)
            self.moved_to: list[str] = []

        def to(self, device: str) -> "Model":  # type: ignore[override]
            self.moved_to.append(device)
            return self

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert sft.onto_gpu(model := Model()) is model and model.moved_to == []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert sft.onto_gpu(model := Model()).moved_to == ["cuda"]  # transformers loaded it onto the CPU
    quantized = Model()
    quantized.is_loaded_in_4bit = True  # bitsandbytes placed it; .to() would fail
    assert sft.onto_gpu(quantized).moved_to == []
