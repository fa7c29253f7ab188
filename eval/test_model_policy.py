"""The model path: tool-call parsing, contexts exactly as TRL trains on them, and batched generation
with the tiny offline Qwen3 from the command line's settings to the report files."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from eval import metrics
from eval.evaluate import EvalSettings, build_policy, evaluate, load_questions
from chat_format import prepare_tokenizer, tool_call_text
from eval.model_policy import ModelPolicy, decide_turn
from eval.report import NO_QUERY_SQL, write_report
from eval.runner import StopReason, play_batched, play_split
from policies import OraclePolicy, ToolCall
from prompt import system_prompt
from spider_data import SpiderSplit, to_grpo_rows

# --- parsing a turn -------------------------------------------------------------------------------

DESCRIBE = '<tool_call>\n{"name": "describe", "arguments": {"table": "singer"}}\n</tool_call>'
QUERY = '<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT 1"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "truncated", "calls", "stop"),
    [
        (DESCRIBE, False, [ToolCall("describe", {"table": "singer"})], None),
        ("<think>\nlook first\n</think>\n\n" + DESCRIBE, False, [ToolCall("describe", {"table": "singer"})], None),
        (DESCRIBE + "\n" + QUERY, False,
         [ToolCall("describe", {"table": "singer"}), ToolCall("query", {"sql": "SELECT 1"})], None),
        ('<tool_call>{"name": "answer", "arguments": "{\\"value\\": \\"3\\"}"}</tool_call>', False,
         [ToolCall("answer", {"value": "3"})], None),
        ('<tool_call>{"name": "answer"}</tool_call>', False, [ToolCall("answer", {})], None),
        ("The answer is 3.", False, [], StopReason.NO_TOOL_CALL),
        ("", False, [], StopReason.NO_TOOL_CALL),
        ("SELECT count(*) FROM singer; and then", True, [], StopReason.TRUNCATED),
        ('<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT', True, [], StopReason.TRUNCATED),
        ('<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT 1"}}', False, [], StopReason.MALFORMED_TOOL_CALL),
        ("<tool_call>\nquery(sql='SELECT 1')\n</tool_call>", False, [], StopReason.MALFORMED_TOOL_CALL),
        ('<tool_call>{"arguments": {"sql": "SELECT 1"}}</tool_call>', False, [], StopReason.MALFORMED_TOOL_CALL),
        ('<tool_call>{"name": "query", "arguments": ["SELECT 1"]}</tool_call>', False, [],
         StopReason.MALFORMED_TOOL_CALL),
        (DESCRIBE + "<tool_call>{oops}</tool_call>", False, [], StopReason.MALFORMED_TOOL_CALL),
    ],
    ids=[
        "one call", "after thinking", "two calls", "arguments as a JSON string", "no arguments",
        "plain text", "nothing", "cut plain text", "cut inside a call", "unclosed call", "not JSON",
        "no name", "arguments not an object", "one bad call spoils the turn",
    ],
)
def test_a_turn_is_read_as_trl_reads_it(
    tokenizer: Any, text: str, truncated: bool, calls: list[ToolCall], stop: StopReason | None
) -> None:
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "How many?"}], add_generation_prompt=True,
                                           tokenize=True, return_dict=False, enable_thinking=False)
    completion = tokenizer.encode(text + ("" if truncated else "<|im_end|>"), add_special_tokens=False)
    decision = decide_turn(prepare_tokenizer(tokenizer), completion, list(prompt), truncated=truncated)
    assert decision.calls == calls and decision.stop_reason == stop


# --- a stand-in model that writes the oracle's tool calls -----------------------------------------


class OracleWritingModel:
    """Generates nothing: reads the question and the number of tool replies in its context and writes
    the oracle's next call as Qwen3 writes one, then "Done." once the plan is over."""

    def __init__(self, tokenizer: Any, rows: list[dict[str, Any]]) -> None:
        self.tokenizer = tokenizer
        self.plans = {row["question"]: OraclePolicy().plan(row) for row in rows}
        self.config = SimpleNamespace(max_position_embeddings=40_960)
        end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.generation_config = SimpleNamespace(eos_token_id=[end_of_turn])
        self.device = torch.device("cpu")
        self.contexts: dict[str, list[int]] = {}
        self.batch_sizes: list[int] = []

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **options: Any) -> torch.Tensor:
        self.batch_sizes.append(len(input_ids))
        completions = []
        for ids, mask in zip(input_ids, attention_mask, strict=True):
            assert mask[-1] == 1, "left padding: every context ends in a real token"
            text = self.tokenizer.decode(ids[mask.bool()])
            question = text.split("<|im_start|>user\n")[1].split("\n\nTables in this database")[0]
            self.contexts[question] = ids[mask.bool()].tolist()
            plan, turn = self.plans[question], text.count("<tool_response>")
            call = plan[turn] if turn < len(plan) else None
            completion = (tool_call_text(call.name, call.arguments) if call else "Done.") + "<|im_end|>"
            completions.append(self.tokenizer.encode(completion, add_special_tokens=False))
        width = max(map(len, completions))
        padded = [completion + [options["pad_token_id"]] * (width - len(completion)) for completion in completions]
        return torch.cat([input_ids, torch.tensor(padded)], dim=1)


def test_a_model_writing_the_oracles_calls_scores_like_the_oracle(tokenizer: Any, builtin_sample: SpiderSplit) -> None:
    model = OracleWritingModel(tokenizer, to_grpo_rows(builtin_sample.examples, system_prompt(10)))
    records = play_split(builtin_sample, ModelPolicy(model, tokenizer), batch_size=4, progress=False)
    oracle = play_split(builtin_sample, OraclePolicy(), progress=False)
    assert [record.correct for record in records] == [True] * len(records)
    assert [record.steps for record in records] == [record.steps for record in oracle]
    assert {(record.stop_reason, record.final_text) for record in records} == {(StopReason.NO_TOOL_CALL.value, "Done.")}
    assert all(record.turns == record.steps + 1 for record in records)
    assert max(model.batch_sizes) == 4
    assert metrics.by_hardness(records)["overall"].accuracy == 1.0


def test_the_model_sees_exactly_what_trl_renders(tokenizer: Any, builtin_sample: SpiderSplit) -> None:
    """Context grown by concatenation (generated tokens, then rendered tool replies) equals one render of the
    whole conversation with TRL's training template: the token sequence training scored."""
    rows = to_grpo_rows(builtin_sample.examples, system_prompt(10))
    model = OracleWritingModel(tokenizer, rows)
    policy = ModelPolicy(model, tokenizer)
    for index, messages, episode, _ in play_batched(rows, policy, step_budget=10, batch_size=3):
        assert episode.is_correct and messages[-1]["role"] == "tool"
        assert model.contexts[rows[index]["question"]] == policy.prompt_ids(messages)


# --- the tiny random model, end to end ------------------------------------------------------------


def test_tiny_model_plays_batched_and_writes_every_report_file(tiny_model_dir: Path, tmp_path: Path) -> None:
    settings = EvalSettings(checkpoint=tiny_model_dir, limit=3, batch_size=2, max_new_tokens=6,
                            out=tmp_path / "report", progress=False)
    policy = build_policy(settings)
    batch_sizes = []
    generate = policy.model.generate
    policy.model.generate = lambda **inputs: batch_sizes.append(len(inputs["input_ids"])) or generate(**inputs)
    report = evaluate(settings, load_questions(settings), policy)
    files = write_report(report, settings.out_dir)

    assert batch_sizes[0] == 2 and sum(batch_sizes) >= 3
    assert report["counts"]["scored"] == 3 and report["by_hardness"]["overall"]["n"] == 3
    for question in report["questions"]:
        assert question["turns"] >= 1 and 0 < question["generated_tokens"] <= 6 * question["turns"]
        assert question["stop_reason"] in {reason.value for reason in StopReason}
        assert question["steps"] == len([call for call in question["tool_calls"] if not call["after_episode"]])
    assert all(path.is_file() and path.stat().st_size > 0 for path in files.values())
    pred_lines = files["pred.sql"].read_text().splitlines()
    assert len(pred_lines) == 3 and len(files["gold.sql"].read_text().splitlines()) == 3
    assert all(line == NO_QUERY_SQL for line in pred_lines)  # random weights run no query
    generation = report["timing"]["generation"]
    assert generation["calls"] == len(batch_sizes) and generation["mean_batch"] == sum(batch_sizes) / len(batch_sizes)
    assert generation["new_tokens"] == sum(question["generated_tokens"] for question in report["questions"])
    assert 0 < generation["decode_steps"] <= 6 * len(batch_sizes) and 0 <= generation["idle_decode_share"] < 1
    assert "generate calls" in files["report.md"].read_text()


def test_the_generation_summary_counts_the_row_steps_spent_on_finished_rows() -> None:
    from eval.model_policy import GenerationCall, generation_summary

    calls = [GenerationCall(batch=4, longest_context=100, longest_new=10, new_tokens=16, seconds=1.0),  # 40 slots
             GenerationCall(batch=2, longest_context=120, longest_new=5, new_tokens=10, seconds=3.0)]  # 10, all used
    summary = generation_summary(calls, elapsed_s=8.0)
    assert summary["calls"] == 2 and summary["seconds"] == 4.0 and summary["share_of_elapsed"] == 0.5
    assert summary["decode_steps"] == 15 and summary["new_tokens"] == 26 and summary["mean_batch"] == 3.0
    assert summary["idle_decode_share"] == 0.48  # 1 - 26 / 50
    assert [call["seconds"] for call in summary["slowest_calls"]] == [3.0, 1.0]
    assert summary["prefix_cache_hit_rate"] is None  # no engine with a prefix cache generated these
    cached = [GenerationCall(batch=2, longest_context=50, longest_new=5, new_tokens=8, seconds=1.0, continuous=True,
                             cached_context_tokens=hits, context_tokens=context) for hits, context in ((0, 80), (60, 100))]
    assert generation_summary(cached, elapsed_s=2.0)["prefix_cache_hit_rate"] == round(60 / 180, 3)
    assert generation_summary([], elapsed_s=1.0) == {}


# --- generation sized by GPU memory ---------------------------------------------------------------


def test_a_turn_split_into_smaller_generate_calls_gives_the_same_completions(tiny_model_dir: Path,
                                                                            tokenizer: Any) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    policy = ModelPolicy(model, tokenizer, max_new_tokens=5)
    contexts = [policy.prompt_ids([{"role": "user", "content": "How many singers are there?" * repeat}])
                for repeat in (3, 1, 5, 2, 4)]
    whole = policy.generate(contexts)
    policy.max_generation_batch = 2
    calls = []
    policy.model.generate = lambda **inputs: calls.append(len(inputs["input_ids"])) or model.__class__.generate(
        model, **inputs)
    assert [completion.ids for completion in policy.generate(contexts)] == [completion.ids for completion in whole]
    assert calls == [2, 2, 1]


class RunsOutOfMemoryAbove:
    """A model whose generate fails as CUDA does when handed more than ``limit`` contexts."""

    def __init__(self, limit: int) -> None:
        self.limit, self.calls = limit, []
        self.config = SimpleNamespace(max_position_embeddings=40_960)
        self.generation_config = SimpleNamespace(eos_token_id=[0])
        self.device = torch.device("cpu")

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **options: Any) -> torch.Tensor:
        self.calls.append(len(input_ids))
        if len(input_ids) > self.limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (stand-in)")
        return torch.cat([input_ids, torch.zeros((len(input_ids), 1), dtype=torch.long)], dim=1)


def test_an_out_of_memory_turn_is_retried_in_halves_and_the_limit_is_kept(tokenizer: Any) -> None:
    model = RunsOutOfMemoryAbove(limit=2)
    policy = ModelPolicy(model, tokenizer, max_new_tokens=1)
    contexts = [[5] * length for length in (4, 1, 3, 2, 5)]
    completions = policy.generate(contexts)
    assert len(completions) == 5 and policy.max_generation_batch == 2
    assert model.calls == [5, 2, 2, 1]  # one failed call, then halves
    model.calls.clear()
    policy.generate(contexts)
    assert model.calls == [2, 2, 1]  # the next turn starts at the limit found


def test_a_single_turn_that_cannot_fit_says_what_to_lower(tokenizer: Any) -> None:
    policy = ModelPolicy(RunsOutOfMemoryAbove(limit=0), tokenizer, max_new_tokens=7)
    with pytest.raises(RuntimeError, match="lower --max-new-tokens"):
        policy.generate([[5, 5, 5]])


def test_generate_calls_are_sized_by_the_kv_cache_that_fits(tiny_model_dir: Path, tokenizer: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoConfig

    from eval import model_policy
    from models import qwen3_1_7b_config

    # Qwen3-1.7B in bf16: 28 layers x 8 KV heads x 128 dims x (key + value) x 2 bytes a token.
    qwen3_1_7b = SimpleNamespace(config=qwen3_1_7b_config(), dtype=torch.bfloat16)
    assert model_policy.kv_cache_bytes_per_token(qwen3_1_7b) == 28 * 8 * 128 * 2 * 2
    config = AutoConfig.from_pretrained(tiny_model_dir)
    assert model_policy.kv_cache_bytes_per_token(SimpleNamespace(config=config)) > 0
    # 1 GiB free, half of it for the cache: contexts of 1,000 tokens at 100 KiB a token -> 5 a call.
    assert model_policy.contexts_that_fit(2**30, 100 * 1024, 1000, wanted=64) == 5
    assert model_policy.contexts_that_fit(2**30, 100 * 1024, 10**6, wanted=64) == 1  # never fewer than one
    assert model_policy.contexts_that_fit(2**40, 100 * 1024, 1000, wanted=64) == 64

    model = RunsOutOfMemoryAbove(limit=99)
    model.config = SimpleNamespace(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=8,
                                   max_position_embeddings=40_960)
    policy = ModelPolicy(model, tokenizer, max_new_tokens=10)  # contexts of 20 + 10 tokens
    per_token = policy.kv_bytes_per_token  # 2 x 2 layers x 1 head x 4 dims x 4 bytes = 64
    monkeypatch.setattr(model_policy, "free_gpu_memory", lambda model: 2 * 64 * 30 * 3)  # 3 contexts of 30 tokens
    policy.generate([[5] * 20] * 7)
    assert per_token == 64 and model.calls == [3, 3, 1]


# --- continuous batching -------------------------------------------------------------------------


def test_continuous_batching_plays_every_episode_exactly_as_padded_calls_do(tiny_model_dir: Path,
                                                                             tmp_path: Path) -> None:
    reports = {}
    for generation in ("padded", "continuous"):
        settings = EvalSettings(checkpoint=tiny_model_dir, limit=4, batch_size=4, max_new_tokens=8,
                                out=tmp_path / generation, progress=False, generation=generation)
        reports[generation] = evaluate(settings, load_questions(settings), build_policy(settings))
    padded, continuous = reports["padded"], reports["continuous"]
    assert continuous["questions"] == padded["questions"]  # the same tokens, calls, stop reasons and scores
    assert continuous["timing"]["generation"]["calls"] >= 1
    assert continuous["timing"]["generation"]["idle_decode_share"] is None  # rows leave as they end: none idle
    assert padded["timing"]["generation"]["idle_decode_share"] is not None


def test_continuous_batching_ends_each_row_at_its_own_stop_as_padded_calls_do(tiny_model_dir: Path,
                                                                               tokenizer: Any) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    torch.manual_seed(0)
    with torch.no_grad():  # the tiny model's small random weights write one token over and over: spread them
        for parameter in model.parameters():
            parameter.normal_(0, 0.3)
    policy = ModelPolicy(model, tokenizer, max_new_tokens=8)
    contexts = [policy.prompt_ids([{"role": "user", "content": f"How many singers are there? {'x ' * repeat}"}])
                for repeat in (3, 1, 5, 2, 4)]
    # Random weights never write an end of turn; make a token some rows write mid-turn a stop, so that rows
    # end at different lengths and others run to the cap.
    first = policy.generate(contexts)
    policy.stop_ids = [*policy.stop_ids, first[0].ids[5]]
    padded = policy.generate(contexts)
    policy.continuous = True
    continuous = policy.generate(contexts)
    assert [(c.ids, c.truncated) for c in continuous] == [(c.ids, c.truncated) for c in padded]
    assert {completion.truncated for completion in padded} == {True, False}  # some stopped, some ran to the cap


def test_continuous_batching_refuses_unsloth_and_unknown_modes_up_front(tiny_model_dir: Path) -> None:
    with pytest.raises(ValueError, match="--backend transformers"):
        EvalSettings(checkpoint=tiny_model_dir, backend="unsloth", generation="continuous")
    with pytest.raises(ValueError, match="unknown generation 'paged'"):
        EvalSettings(checkpoint=tiny_model_dir, generation="paged")


# --- generation in rounds ------------------------------------------------------------------------


def spread_tiny_model(tiny_model_dir: Path) -> Any:
    """The tiny Qwen3 with its small random weights spread (as they are, it writes one token over and over)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0, 0.3)
    return model


def test_rounds_give_every_row_the_tokens_one_call_gives_it(tiny_model_dir: Path, tokenizer: Any) -> None:
    policy = ModelPolicy(spread_tiny_model(tiny_model_dir), tokenizer, max_new_tokens=10)
    questions = ["How many singers are there?", "List every concert name.", "Which stadium is largest?",
                 "What is the average age of singers?", "Count the songs released after 2000.",
                 "Name the oldest singer.", "Show all countries.", "How many stadiums hold over 5000?"]
    contexts = [policy.prompt_ids([{"role": "user", "content": question}]) for question in questions]
    # Random weights never end a turn: make a token the first row writes third and one the seventh row writes
    # fifth stops, so that rows end inside the first round, inside the second, or run to the cap.
    first = policy.generate(contexts)
    policy.stop_ids = [*policy.stop_ids, first[0].ids[2], first[6].ids[4]]
    one_call = policy.generate(contexts)
    policy.first_round_tokens = 3
    policy.generation_calls.clear()
    rounds = policy.generate(contexts)
    assert [(c.ids, c.truncated) for c in rounds] == [(c.ids, c.truncated) for c in one_call]
    lengths = [len(completion.ids) for completion in one_call]
    still_writing = sum(length > 3 or completion.truncated for length, completion in zip(lengths, one_call))
    assert 0 < still_writing < len(contexts)  # both rounds ran, and the second one without the finished rows
    assert [(call.batch, call.longest_new) for call in policy.generation_calls] == [
        (len(contexts), 3), (still_writing, max(lengths) - 3)]
    assert {completion.truncated for completion in one_call} == {True, False}


def test_an_eval_in_rounds_plays_every_episode_as_one_call_a_turn_does(tiny_model_dir: Path, tmp_path: Path) -> None:
    reports = {}
    for generation in ("padded", "rounds"):
        settings = EvalSettings(checkpoint=tiny_model_dir, limit=4, batch_size=4, max_new_tokens=8, first_round_tokens=3,
                                out=tmp_path / generation, progress=False, generation=generation)
        reports[generation] = evaluate(settings, load_questions(settings), build_policy(settings))
    assert reports["rounds"]["questions"] == reports["padded"]["questions"]
    assert reports["rounds"]["settings"]["generation"] == "rounds"


def test_rounds_refuse_a_first_round_of_no_tokens(tiny_model_dir: Path, tokenizer: Any) -> None:
    with pytest.raises(ValueError, match="--first-round-tokens must be at least 1, got 0"):
        EvalSettings(checkpoint=tiny_model_dir, generation="rounds", first_round_tokens=0)
    with pytest.raises(ValueError, match="first_round_tokens must be at least 1"):
        ModelPolicy(RunsOutOfMemoryAbove(limit=9), tokenizer, first_round_tokens=0)
