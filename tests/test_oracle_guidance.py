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
    check_supported,
    episode_row,
    oracle_messages,
    replace_rows,
    unsolved_groups,
)
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows  # noqa: E402
from training_logs import trl_advantages  # noqa: E402
from tests.test_train import ScriptedAgent, read_jsonl  # noqa: E402


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
