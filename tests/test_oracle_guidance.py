"""oracle_guidance.py: which rows an unsolved group trains on instead, their tokens and advantages, and a real run."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402  (imports unsloth first, as train.py must)
import sft  # noqa: E402
from agent_env import SQLEnv  # noqa: E402
from chat_format import masked_chat_template, prepare_tokenizer  # noqa: E402
from fewshot import build_fewshot_prompt  # noqa: E402
from launch import check_launch  # noqa: E402
from oracle_guidance import (  # noqa: E402
    OracleGuidance,
    OracleRow,
    assistant_turn_ids,
    check_supported,
    episode_row,
    oracle_messages,
    replace_rows,
    reply_ends,
    unsolved_groups,
)
from policies import OraclePolicy, RecoveryPolicy, ToolCall, play_episode  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows  # noqa: E402
from training_logs import trl_advantages  # noqa: E402
from sql_structure import tables_used  # noqa: E402
from tests.test_train import ScriptedAgent, read_jsonl, tool_call  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return prepare_tokenizer(AutoTokenizer.from_pretrained(tiny_model_dir))


@pytest.fixture(scope="module")
def row() -> dict[str, Any]:
    usable = load_split(BUILTIN_DATA_DIR, "train", progress=False).usable()
    fewshot = build_fewshot_prompt(usable, 2, step_budget=SQLEnv().step_budget)
    example = next(example for example in usable if example.hardness.value == "medium"
                   and example.question not in fewshot.example_questions)
    return to_grpo_rows([example], fewshot.system_prompt())[0]


# --- the oracle's row ----------------------------------------------------------------------------


def test_the_oracle_row_is_the_warmups_rendering_with_the_models_tokens_marked(tokenizer: Any,
                                                                               row: dict[str, Any]) -> None:
    messages, reward = oracle_messages(row, SQLEnv())
    oracle = episode_row(tokenizer, messages, reward)
    assert reward > 0.9  # right, no penalty
    warmup = sft.encode_conversation(tokenizer, messages, masked_chat_template(tokenizer))
    ids = oracle.prompt_ids + oracle.completion_ids
    # The whole render ends with the template's newline after the last <|im_end|>; generation stops before it.
    assert warmup.input_ids[: len(ids)] == ids and len(warmup.input_ids) - len(ids) <= 1
    # The tokens the loss trains are the ones the warm-up trains: the assistant turns, each to its end-of-turn.
    assert len(oracle.tool_mask) == len(oracle.completion_ids)
    assert warmup.is_assistant[len(oracle.prompt_ids): len(ids)] == [bool(flag) for flag in oracle.tool_mask]
    assert 0 < sum(oracle.tool_mask) < len(oracle.tool_mask)  # tool replies in between, not trained


# --- advantages ----------------------------------------------------------------------------------


def group_advantages(rewards: torch.Tensor, group_size: int, scale_rewards: str) -> torch.Tensor:
    return torch.tensor(trl_advantages(rewards.tolist(), group_size, scale_rewards))


def test_advantages_follow_trls_formula_per_scale() -> None:
    rewards = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 0.5])
    group = group_advantages(rewards, 3, "group")
    assert torch.allclose(group[:3], torch.zeros(3))
    std = torch.tensor([1.0, 1.0, 0.5]).std()
    assert torch.allclose(group[3:], (torch.tensor([1.0, 1.0, 0.5]) - 2.5 / 3) / (std + 1e-4))
    batch = group_advantages(rewards, 3, "batch")
    assert torch.allclose(batch[3:], (torch.tensor([1.0, 1.0, 0.5]) - 2.5 / 3) / (rewards.std() + 1e-4))
    assert torch.allclose(group_advantages(rewards, 3, "none")[3:], torch.tensor([1.0, 1.0, 0.5]) - 2.5 / 3)
    with pytest.raises(ValueError, match="scale_rewards must be"):
        group_advantages(rewards, 3, "rank")


def test_unsolved_groups_are_those_without_a_right_answer() -> None:
    assert unsolved_groups([False, False, True, False, False, False], 3) == [1]
    assert unsolved_groups([True] * 4, 2) == []


def scored_batch() -> dict[str, Any]:
    """TRL's scored batch for 2 groups of 2 rows, 3 completion tokens each (the last a pad in row 1)."""
    completion_mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1]])
    tool_mask = torch.tensor([[1, 0, 1], [1, 0, 1], [1, 1, 1], [1, 1, 1]])
    return {
        "prompt_ids": torch.tensor([[0, 5, 6], [0, 5, 6], [7, 8, 9], [7, 8, 9]]),
        "prompt_mask": torch.tensor([[0, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]]),
        "completion_ids": torch.tensor([[1, 2, 3], [4, 5, 0], [1, 1, 1], [2, 2, 2]]),
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": torch.zeros(4),
        "num_items_in_batch": (completion_mask * tool_mask).sum(),
        "max_left_pad": torch.tensor([1, 1, 0, 0]),  # Unsloth's per-row extra, left alone
    }


def test_a_replaced_row_gets_the_oracles_tokens_and_its_group_new_advantages() -> None:
    batch = scored_batch()
    oracle = OracleRow(prompt_ids=[5, 6], completion_ids=[10, 11, 12, 13, 14], tool_mask=[1, 1, 0, 0, 1], reward=1.0)
    replaced = replace_rows(batch, {1: oracle}, pad_id=0, group_size=2, scale_rewards="group",
                            rewards=[0.0, 0.0, 0.5, 0.5])
    assert replaced["completion_ids"].tolist() == [[1, 2, 3, 0, 0], [10, 11, 12, 13, 14], [1, 1, 1, 0, 0],
                                                   [2, 2, 2, 0, 0]]
    assert replaced["completion_mask"].tolist()[1] == [1] * 5 and replaced["completion_mask"].tolist()[0] == [1, 1, 1,
                                                                                                             0, 0]
    assert replaced["tool_mask"].tolist()[1] == [1, 1, 0, 0, 1]
    # the wrong episode is pushed down and the oracle's up; the other group, all alike, still teaches nothing
    advantages = replaced["advantages"].tolist()
    assert advantages[0] < 0 < advantages[1] and advantages[2] == advantages[3] == 0
    assert int(replaced["num_items_in_batch"]) == 2 + 3 + 3 + 3  # row 0: 2 loss tokens, row 1: the oracle's 3
    assert torch.equal(replaced["max_left_pad"], batch["max_left_pad"])
    assert batch["completion_ids"].shape == (4, 3)  # the batch given is left as it was


@pytest.mark.parametrize(("key", "value"), [("old_per_token_logps", torch.zeros(4, 3)),
                                            ("unsloth_sample_weight", torch.ones(4)),
                                            ("some_per_token_extra", torch.zeros(4, 3))])
def test_per_row_values_guidance_cannot_rebuild_are_refused(key: str, value: torch.Tensor) -> None:
    oracle = OracleRow([5, 6], [10], [1], 1.0)
    with pytest.raises(ValueError, match=key):
        replace_rows({**scored_batch(), key: value}, {1: oracle}, 0, 2, "group", [0.0] * 4)
    replace_rows({**scored_batch(), "sampling_per_token_logps": None}, {1: oracle}, 0, 2, "group", [0.0] * 4)


def guidance(rewards: list[float], answers: list[bool], oracle: OracleRow) -> OracleGuidance:
    guide = OracleGuidance(tokenizer=SimpleNamespace(pad_token_id=0, eos_token_id=0), env_factory=SQLEnv,
                           rewards_of=lambda: rewards, answers_of=lambda: answers, scale_rewards="group")
    guide.oracle_row = lambda row: oracle  # type: ignore[method-assign]
    return guide


def test_only_unsolved_groups_are_guided_and_a_mismatched_prompt_stops_guidance() -> None:
    inputs = [{"question": "q1"}] * 2 + [{"question": "q2"}] * 2
    guide = guidance([0.0, 0.0, 1.0, 0.0], [False, False, True, False], OracleRow([5, 6], [10, 11], [1, 1], 1.0))
    batch = {**scored_batch(), "advantages": group_advantages(torch.tensor([0.0, 0.0, 1.0, 0.0]), 2, "group")}
    guided, count = guide.guided_output(inputs, batch, group_size=2)
    assert count == 1 and guided["completion_ids"][1, :2].tolist() == [10, 11]
    assert torch.equal(guided["completion_ids"][2:], batch["completion_ids"][2:])
    # an oracle episode longer than the completion budget is left out
    assert guide.guided_output(inputs, batch, group_size=2, max_length=1)[1] == 0 and guide.last_too_long == 1
    mismatched = guidance([0.0, 0.0, 1.0, 0.0], [False, False, True, False], OracleRow([5, 7], [10], [1], 1.0))
    with pytest.raises(ValueError, match="renders to other tokens"):
        mismatched.guided_output(inputs, batch, group_size=2)


def test_rewards_that_do_not_give_trls_advantages_stop_guidance() -> None:
    guide = guidance([0.0, 0.0, 1.0, 0.0], [False, False, True, False], OracleRow([5, 6], [10], [1], 1.0))
    with pytest.raises(ValueError, match="do not give TRL's advantages"):
        guide.guided_output([{"question": "q"}] * 4, scored_batch(), group_size=2)  # all-zero advantages
    # a float32 mean's rounding, blown up by the 1e-4 of an equal group's std, is not a mismatch
    rounded = {**scored_batch(), "advantages": torch.tensor([1e-3, 1e-3, 0.7070, -0.7070])}
    guide.guided_output([{"question": "q"}] * 4, rounded, group_size=2)


def test_settings_with_per_row_log_probabilities_are_refused() -> None:
    agent = SimpleNamespace(fast_inference=False, guide_unsolved=True, oversample_groups=0, phase="easy",
                            backend="transformers")
    good = SimpleNamespace(beta=0.0, use_vllm=False, steps_per_generation=4, num_iterations=1,
                           gradient_accumulation_steps=4, world_size=1, deepspeed=None)
    check_supported(agent, good)
    check_launch(agent, good)
    with pytest.raises(ValueError, match="--guide_unsolved runs in one process"):
        check_launch(agent, SimpleNamespace(**{**vars(good), "world_size": 2}))
    with pytest.raises(ValueError, match="--beta 0"):
        check_supported(agent, SimpleNamespace(**{**vars(good), "beta": 0.04}))
    with pytest.raises(ValueError, match="--fast_inference"):
        check_supported(SimpleNamespace(**{**vars(agent), "fast_inference": True}), good)
    with pytest.raises(ValueError, match="within one optimizer step"):
        check_supported(agent, SimpleNamespace(**{**vars(good), "gradient_accumulation_steps": 6}))


def test_guidance_with_a_reference_model_is_refused_before_any_model_loads(tmp_path: Path) -> None:
    with pytest.raises(train.SetupError, match="--guide_unsolved needs --beta 0"):
        train.main(["--output_dir", str(tmp_path / "out"), "--guide_unsolved", "--beta", "0.04"])
    assert not (tmp_path / "out").exists()


def test_default_guidance_gives_way_to_settings_it_cannot_run_with_and_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    agent, grpo, explicit = train.parse_config([])
    assert agent.guide_unsolved and train.settle_guidance(agent, grpo, explicit).guide_unsolved
    assert capsys.readouterr().out == ""
    agent, grpo, explicit = train.parse_config(["--beta", "0.04"])
    assert not train.settle_guidance(agent, grpo, explicit).guide_unsolved
    assert "oracle guidance (on by default) is off for this run: --guide_unsolved needs --beta 0" in (
        capsys.readouterr().out)
    agent, grpo, explicit = train.parse_config(["--phase", "sft"])  # a warm-up has no groups: nothing to say
    assert not train.settle_guidance(agent, grpo, explicit).guide_unsolved and capsys.readouterr().out == ""
    for off in (["--guide_unsolved", "false"], ["--no_guide_unsolved"]):
        agent, grpo, explicit = train.parse_config(off)
        assert not train.settle_guidance(agent, grpo, explicit).guide_unsolved


def test_the_oversampler_sees_an_oracle_row_as_a_right_answer() -> None:
    inputs = [{"question": "q1"}] * 2 + [{"question": "q2"}] * 2
    guide = guidance([0.0, 0.0, 1.0, 0.0], [False, False, True, False], OracleRow([5, 6], [10, 11], [1, 1], 1.0))
    batch = {**scored_batch(), "advantages": group_advantages(torch.tensor([0.0, 0.0, 1.0, 0.0]), 2, "group")}
    assert guide.answers_after_guidance() == [False, False, True, False]  # nothing guided yet
    guide.guided_output(inputs, batch, group_size=2)
    assert guide.last_guided_rows == [1]
    assert guide.answers_after_guidance() == [False, True, True, False]
    assert guide.answers_of() == [False, False, True, False]  # what the episodes did, for the sampler, unchanged
    # A round with nothing to guide leaves no row marked from the round before.
    solved = guidance([1.0, 0.0, 1.0, 0.0], [True, False, True, False], OracleRow([5, 6], [10], [1], 1.0))
    solved.last_guided_rows = [1]
    solved.guided_output(inputs, {**batch, "advantages": group_advantages(torch.tensor([1.0, 0.0, 1.0, 0.0]), 2,
                                                                          "group")}, group_size=2)
    assert solved.last_guided_rows == [] and solved.answers_after_guidance() == [True, False, True, False]


# --- recovery rows ---------------------------------------------------------------------------------


class ScriptedCalls(OraclePolicy):
    """A model's episode, scripted: these calls and nothing else."""

    def __init__(self, calls: list[ToolCall]) -> None:
        super().__init__()
        self.calls = calls

    def plan(self, row: dict[str, Any]) -> list[ToolCall]:
        return list(self.calls)


def played_row(tokenizer: Any, row: dict[str, Any], calls: list[ToolCall]) -> tuple[OracleRow, Any]:
    """One scripted episode as the tool loop's row (its tokens rendered as the oracle's are) and its record."""
    env = SQLEnv()
    transcript = play_episode(env, row, ScriptedCalls(calls))
    return episode_row(tokenizer, transcript.messages, env.get_reward()), transcript.episode


def group_batch(rows: list[OracleRow], rewards: list[float], pad_id: int) -> dict[str, Any]:
    """TRL's scored batch for one group of these rows (right-padded completions, group-scaled advantages)."""
    width = max(len(row.completion_ids) for row in rows)
    completion_mask = torch.tensor([[1] * len(row.completion_ids) + [0] * (width - len(row.completion_ids))
                                    for row in rows])
    tool_mask = torch.tensor([row.tool_mask + [1] * (width - len(row.tool_mask)) for row in rows])
    return {
        "prompt_ids": torch.tensor([row.prompt_ids for row in rows]),
        "prompt_mask": torch.ones(len(rows), len(rows[0].prompt_ids), dtype=torch.long),
        "completion_ids": torch.tensor([row.completion_ids + [pad_id] * (width - len(row.completion_ids))
                                        for row in rows]),
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": torch.tensor(trl_advantages(rewards, len(rows), "group")),
        "num_items_in_batch": (completion_mask * tool_mask).sum(),
    }


def test_the_recovery_policy_replays_the_models_calls_then_plays_the_gold_query(row: dict[str, Any]) -> None:
    wrong = ToolCall("query", {"sql": "SELECT no_such_column FROM " + row["gold_sql"].split("FROM")[1].split()[0]},
                     imitated=False)
    transcript = play_episode(SQLEnv(), row, RecoveryPolicy(prefix=(wrong,)))
    steps = transcript.episode.steps
    assert [step.tool for step in steps] == ["query", "query", "answer"] and steps[0].error is not None
    assert steps[1].arguments == {"sql": row["gold_sql"]} and transcript.episode.is_correct


def test_an_unsolved_group_with_a_refused_query_trains_on_its_recovery(tokenizer: Any, row: dict[str, Any]) -> None:
    table = row["gold_sql"].split("FROM")[1].split()[0]
    refused_calls = [ToolCall("describe", {"table": table}), ToolCall("query", {"sql": f"SELECT no_such_column FROM {table}"}),
                     ToolCall("answer", {"value": "no idea"})]
    refused, refused_record = played_row(tokenizer, row, refused_calls)
    plain, plain_record = played_row(tokenizer, row, [ToolCall("answer", {"value": "no idea"})])
    assert refused_record.steps[1].error is not None and not refused_record.is_correct
    rewards = [refused.reward, plain.reward]
    pad_id = tokenizer.pad_token_id
    guide = OracleGuidance(tokenizer, SQLEnv, lambda: rewards, lambda: [False, False], "group",
                           episodes_of=lambda: [refused_record, plain_record])
    batch = group_batch([refused, plain], rewards, pad_id)
    guided, count = guide.guided_output([row, row], batch, group_size=2)
    assert count == 1 and guide.last_recovered == 1 and guide.last_guided_rows == [1]
    cut = reply_ends(refused.tool_mask, len(refused.tool_mask))[1]  # the refused query's reply ends here
    length = int(guided["completion_mask"][1].sum())
    tokens, mask = guided["completion_ids"][1, :length].tolist(), guided["tool_mask"][1, :length].tolist()
    # the model's own turns through the refusal, as context only; then the gold query, trained
    assert tokens[:cut] == refused.completion_ids[:cut] and mask[:cut] == [0] * cut
    gold_turn = assistant_turn_ids(tokenizer, {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "query", "arguments": {"sql": row["gold_sql"]}}}]})
    assert tokens[cut:cut + len(gold_turn)] == gold_turn and mask[cut:cut + len(gold_turn)] == [1] * len(gold_turn)
    assert tokenizer.decode(tokens[cut:]).count("<tool_call>") == 2  # the query and the answer
    advantages = guided["advantages"].tolist()
    assert advantages[0] < 0 < advantages[1]  # the recovery, right, pushes the refused episode down
    # without the records, or where no episode had a query refused, the group trains on the oracle's whole episode
    oracle = episode_row(tokenizer, *oracle_messages(row, SQLEnv()))
    for records in (None, [plain_record, plain_record]):
        guide = OracleGuidance(tokenizer, SQLEnv, lambda: rewards, lambda: [False, False], "group",
                               episodes_of=None if records is None else (lambda records=records: records))
        guided, count = guide.guided_output([row, row], batch, group_size=2)
        assert count == 1 and guide.last_recovered == 0
        assert guided["completion_ids"][1, :len(oracle.completion_ids)].tolist() == oracle.completion_ids


def test_a_recovery_that_does_not_fit_or_whose_row_lacks_a_reply_is_left_out(tokenizer: Any,
                                                                            row: dict[str, Any]) -> None:
    table = row["gold_sql"].split("FROM")[1].split()[0]
    refused, record = played_row(tokenizer, row, [ToolCall("query", {"sql": f"SELECT no_such_column FROM {table}"}),
                                                  ToolCall("answer", {"value": "no idea"})])
    rewards = [refused.reward, refused.reward]
    first_reply_end = reply_ends(refused.tool_mask, len(refused.tool_mask))[0]
    truncated = OracleRow(refused.prompt_ids, refused.completion_ids[:first_reply_end - 1],
                          refused.tool_mask[:first_reply_end - 1], refused.reward)  # cut inside the refusal's reply

    def guide() -> OracleGuidance:
        return OracleGuidance(tokenizer, SQLEnv, lambda: rewards, lambda: [False, False], "group",
                              episodes_of=lambda: [record, record])

    whole = guide().recovery_row([row, row], group_batch([refused, refused], rewards, tokenizer.pad_token_id),
                                 range(0, 2), None)
    assert whole is not None
    budget = len(whole.completion_ids) - 1
    assert guide().recovery_row([row, row], group_batch([refused, refused], rewards, tokenizer.pad_token_id),
                                range(0, 2), budget) is None
    # a row whose tool replies do not match its record's calls (here: the reply cut short) is not continued
    assert guide().recovery_row([row, row], group_batch([truncated, truncated], rewards, tokenizer.pad_token_id),
                                range(0, 2), None) is None
    oracle = episode_row(tokenizer, *oracle_messages(row, SQLEnv()))
    guided, count = (guiding := guide()).guided_output([row, row], group_batch([truncated, truncated], rewards,
                                                                                tokenizer.pad_token_id), group_size=2)
    assert count == 1 and guiding.last_recovered == 0  # the oracle's whole episode instead
    assert guided["completion_ids"][1, :len(oracle.completion_ids)].tolist() == oracle.completion_ids


def test_recovery_rows_need_guidance_and_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(train.SetupError, match="--guide_recovery shapes oracle guidance's rows, and guidance is off"):
        train.main(["--output_dir", str(tmp_path / "out"), "--guide_recovery", "--guide_unsolved", "false",
                    "--phase", "easy", "--dry-run"])
    assert not (tmp_path / "out").exists()


# --- a real run ----------------------------------------------------------------------------------


def two_steps(agent: ScriptedAgent, output_dir: Path, model_dir: Path, *flags: str,
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two easy-phase steps of one group of 2 episodes over 2 questions, played by ``agent``: each step's logged
    metrics and the scored batch TRL trained on."""
    trained: list[dict[str, Any]] = []
    argv = ["--output_dir", str(output_dir), "--model", str(model_dir), "--max_questions", "2",
            "--num_generations", "2", "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "1",
            "--max_completion_length", "1536", "--save_strategy", "no", "--report_to", "none", "--phase", "easy",
            "--max_steps", "2", "--learning_rate", "1e-3", *flags]
    train.main(argv, before_train=lambda trainer: agent.install_capturing(trainer, trained))
    steps = [entry for entry in read_jsonl(output_dir / "easy" / "metrics.jsonl") if "loss" in entry]
    assert len(steps) == 2 == len(trained)
    return steps, trained


class WrongAgent(ScriptedAgent):
    """Plays every tool and answers wrong in every episode: no group has a right answer."""

    def turn(self, text: str, generation: int) -> str:
        return super().turn(text, 1)


@pytest.mark.slow
@pytest.mark.parametrize(("guided", "scale_rewards"), [(False, "group"), (True, "group"), (True, "batch")])
def test_unsolved_groups_teach_nothing_unless_guided(tmp_path: Path, tiny_model_dir: Path, guided: bool,
                                                     scale_rewards: str) -> None:
    steps, trained = two_steps(WrongAgent(), tmp_path, tiny_model_dir, "--scale_rewards", scale_rewards,
                               "--guide_unsolved", str(guided).lower())
    assert all(step["episode/accuracy"] == 0.0 for step in steps)  # what was generated: all wrong
    if not guided:
        assert all(float(output["advantages"].abs().max()) == 0.0 for output in trained)
        assert all(step["grad_norm"] == 0.0 for step in steps)
        return
    tokenizer = agent_tokenizer(tiny_model_dir)
    for output, step in zip(trained, steps, strict=True):
        assert step["guide/guided_share"] == 1.0 and step["guide/guided_groups"] == 1
        advantages = output["advantages"].tolist()
        assert advantages[0] < 0 < advantages[1]  # the last row is the oracle's
        oracle_text = tokenizer.decode(output["completion_ids"][1][output["completion_mask"][1].bool()])
        assert '"name": "answer"' in oracle_text and "certainly wrong" not in oracle_text
        assert step["grad_norm"] > 0.0


class RefusedQueryAgent(ScriptedAgent):
    """Describes the table, sends a query SQLite refuses, answers wrong, then calls once more after the episode."""

    def turn(self, text: str, generation: int) -> str:
        scripted = super().turn(text, 1)
        if '"name": "sample"' in scripted:
            question = next(q for q in self.gold if q in text.split("<|im_start|>user", 1)[1])
            table = tables_used(self.gold[question].gold_sql)[0]
            return tool_call("query", sql=f"SELECT no_such_column FROM {table}")
        return scripted


@pytest.mark.slow
def test_a_refused_episodes_group_trains_on_its_recovery_through_trl(tmp_path: Path, tiny_model_dir: Path) -> None:
    steps, trained = two_steps(RefusedQueryAgent(), tmp_path, tiny_model_dir, "--guide_unsolved", "true",
                               "--guide_recovery")
    tokenizer = agent_tokenizer(tiny_model_dir)
    for output, step in zip(trained, steps, strict=True):
        assert step["guide/recovery_groups"] == 1 and step["guide/guided_groups"] == 1
        length = int(output["completion_mask"][1].sum())
        tokens, mask = output["completion_ids"][1][:length], output["tool_mask"][1][:length]
        context, trained_text = tokenizer.decode(tokens[mask == 0]), tokenizer.decode(tokens[mask == 1])
        # the model's describe and refused query are context; what is trained goes on from the refusal
        assert "no_such_column" in context and "no such column" in context and "no_such_column" not in trained_text
        assert trained_text.count("<tool_call>") == 2 and '"name": "answer"' in trained_text
        assert '"name": "describe"' not in trained_text and "certainly wrong" not in tokenizer.decode(tokens)
        advantages = output["advantages"].tolist()
        assert advantages[0] < 0 < advantages[1] and step["grad_norm"] > 0.0
    from training_logs import guidance_summary
    assert "(2 of them on a recovery from one of their refused queries, --guide_recovery)" in str(
        guidance_summary(steps))


def agent_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


class FirstQuestionRightAgent(ScriptedAgent):
    """Answers right every time on the first question it meets and wrong on every other: one group of a round all
    right, the other all wrong."""

    def __init__(self) -> None:
        super().__init__()
        self.right_question: str | None = None

    def turn(self, text: str, generation: int) -> str:
        user_message = text.split("<|im_start|>user", 1)[1]
        question = next(q for q in self.gold if q in user_message)
        self.right_question = self.right_question or question
        return super().turn(text, 0 if question == self.right_question else 1)


@pytest.mark.slow
@pytest.mark.parametrize("signal", ["reward", "answers"])
def test_with_oversampling_the_guided_group_is_trained_before_the_solved_one(tmp_path: Path, tiny_model_dir: Path,
                                                                             signal: str) -> None:
    # A round asks for one group and generates two (--oversample_groups 1): one all right, one all wrong. Plain
    # oversampling has no group with spread and keeps the first; with guidance the all-wrong group is guided first
    # and is the one trained.
    steps, trained = two_steps(FirstQuestionRightAgent(), tmp_path, tiny_model_dir, "--guide_unsolved",
                               "--oversample_groups", "1", "--group_signal", signal, "--sampling", "plain")
    tokenizer = agent_tokenizer(tiny_model_dir)
    for output, step in zip(trained, steps, strict=True):
        assert step["episode/accuracy"] == 0.5  # what was generated: one group right, one wrong
        assert step["guide/guided_groups"] == 1 and step["guide/guided_share"] == 0.5  # of the generated groups
        assert step["oversample/generated_groups"] == 2 and step["oversample/trained_zero_advantage_share"] == 0.0
        assert len(output["advantages"]) == 2
        advantages = output["advantages"].tolist()
        assert advantages[0] < 0 < advantages[1]  # the wrong episode, then the oracle's
        texts = [tokenizer.decode(ids[mask.bool()]) for ids, mask in zip(output["completion_ids"],
                                                                          output["completion_mask"], strict=True)]
        assert "certainly wrong" in texts[0] and "certainly wrong" not in texts[1]
        assert step["grad_norm"] > 0.0
