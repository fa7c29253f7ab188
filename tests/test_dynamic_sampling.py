"""dynamic_sampling.py: which groups of an oversampled round are trained on, and a real run through train.main."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # imports unsloth first, as train.py must
from dynamic_sampling import ExtraQuestions, keep_rows, loss_tokens, oversampling_summary, select_groups
from launch import check_launch
from tests.test_train import ScriptedAgent, read_jsonl


def scored_batch(advantages: list[float]) -> dict[str, Any]:
    """What TRL's _generate_and_score_completions returns for len(advantages) rows, each row's values its index."""
    rows = len(advantages)
    completion_mask = torch.tensor([[1] * (row + 1) + [0] * (rows - row) for row in range(rows)])  # row r: r+1 tokens
    tool_mask = torch.ones_like(completion_mask)
    tool_mask[:, 0] = 0  # each row's first token is a tool output: not a loss token
    batch = {
        "prompt_ids": torch.arange(rows).unsqueeze(1).repeat(1, 3),
        "prompt_mask": torch.ones(rows, 3, dtype=torch.long),
        "completion_ids": torch.arange(rows).unsqueeze(1).repeat(1, rows + 1),
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": torch.tensor(advantages),
        "old_per_token_logps": None,
        "max_left_pad": torch.arange(rows).unsqueeze(-1),  # Unsloth's per-row extra
        "num_images": list(range(rows)),
        "a_scalar": torch.tensor(7.0),
    }
    batch["num_items_in_batch"] = (completion_mask * tool_mask).sum()
    return batch


# --- which groups are kept ------------------------------------------------------------------------


def test_groups_with_reward_spread_are_kept_and_every_per_row_entry_is_cut_alike() -> None:
    batch = scored_batch([0.0, 0.0, 1.0, -1.0, 0.5, -0.5])  # 3 groups of 2: group 0 taught nothing
    selection = select_groups(batch["advantages"], group_size=2, keep=2)
    assert selection.kept == [1, 2] and selection.generated == 3 and selection.informative == 2
    assert selection.kept_zero_advantage == 0
    kept = keep_rows(batch, selection.rows(2))
    for key in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask", "advantages",
                "max_left_pad"):
        assert torch.equal(kept[key], batch[key][2:6]), key
    assert kept["num_images"] == [2, 3, 4, 5]
    assert kept["old_per_token_logps"] is None and torch.equal(kept["a_scalar"], batch["a_scalar"])
    # The dapo normaliser counts the kept rows' loss tokens only: rows 2-5 write 3-6 tokens, the first a tool output.
    assert int(kept["num_items_in_batch"]) == 2 + 3 + 4 + 5 == int(loss_tokens(kept))
    assert int(batch["num_items_in_batch"]) == 0 + 1 + 2 + 3 + 4 + 5
    assert kept["num_items_in_batch"].dtype == batch["num_items_in_batch"].dtype


def test_too_few_informative_groups_are_filled_with_alike_ones_in_their_order() -> None:
    batch = scored_batch([0.0, 0.0, 0.3, 0.3, 1.0, -1.0, 0.0, 0.0])  # only group 2 has spread
    selection = select_groups(batch["advantages"], group_size=2, keep=3)
    assert selection.kept == [0, 1, 2] and selection.informative == 1 and selection.kept_zero_advantage == 2
    assert selection.rows(2) == [0, 1, 2, 3, 4, 5]
    assert int(keep_rows(batch, selection.rows(2))["num_items_in_batch"]) == 0 + 1 + 2 + 3 + 4 + 5


def test_under_the_answers_signal_groups_whose_answers_differ_come_first() -> None:
    # 3 groups of 2: answers differ; all wrong but shaping differs (advantages too); all right, alike
    advantages = torch.tensor([1.0, -1.0, 0.7, -0.7, 0.0, 0.0])
    answers = [True, False, False, False, True, True]
    by_reward = select_groups(advantages, group_size=2, keep=2, answers=answers)
    assert by_reward.kept == [0, 1] and by_reward.kept_zero_advantage == 0 and by_reward.kept_alike_answers == 1
    by_answers = select_groups(advantages, group_size=2, keep=2, answers=answers, signal="answers")
    assert by_answers.kept == [0, 1] and by_answers.informative == 1  # the first alike group fills the slot
    assert select_groups(advantages, 2, keep=1, answers=answers, signal="answers").kept == [0]
    assert select_groups(advantages, 2, keep=1).kept_alike_answers is None  # not known without answers
    with pytest.raises(ValueError, match="needs each row's answer"):
        select_groups(advantages, 2, keep=1, signal="answers")
    with pytest.raises(ValueError, match="5 answers for 6 rows"):
        select_groups(advantages, 2, keep=1, answers=answers[:5])


def test_equal_rewards_count_as_zero_advantage_even_when_rounding_makes_it_nonzero() -> None:
    # (r - mean) / (std + 1e-4) of a mean rounded off by one float32 step: the same small value in every row.
    alike = 1.1920929e-07 / 1e-4
    selection = select_groups(torch.tensor([alike, alike, 0.2, -0.2]), group_size=2, keep=1)
    assert selection.kept == [1] and selection.informative == 1


@pytest.mark.parametrize("seed", range(5))
def test_whole_groups_are_kept_or_dropped_never_split(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    group_size, groups, keep = 3, 7, 4
    advantages = torch.randn(groups, group_size, generator=generator)
    advantages[torch.rand(groups, generator=generator) < 0.5] = 0.0  # about half the groups alike
    selection = select_groups(advantages.flatten(), group_size, keep)
    rows = selection.rows(group_size)
    assert len(rows) == keep * group_size and rows == sorted(rows)
    assert {row // group_size for row in rows} == set(selection.kept)
    informative = [group for group in range(groups) if advantages[group].max() > advantages[group].min()]
    alike = [group for group in range(groups) if group not in informative]
    assert selection.kept == sorted(informative[:keep] + alike[:max(0, keep - len(informative))])


def test_a_scored_entry_that_is_not_per_row_is_refused_not_cut_wrongly() -> None:
    batch = scored_batch([0.0, 0.0, 1.0, -1.0])
    batch["pixel_values"] = torch.zeros(3, 5)  # 3 rows in a batch of 4
    with pytest.raises(ValueError, match="'pixel_values' has 3 rows, the batch 4"):
        keep_rows(batch, [2, 3])


# --- the extra questions --------------------------------------------------------------------------


def test_extra_questions_come_in_seeded_passes_skipping_the_rounds_own() -> None:
    keys = [f"db\tq{index}" for index in range(5)]
    first, again = ExtraQuestions(keys, seed=3), ExtraQuestions(keys, seed=3)
    draws = [first.draw(1, set()) for _ in range(10)]
    assert draws == [again.draw(1, set()) for _ in range(10)]  # reproducible
    assert sorted(index for (index,) in draws[:5]) == list(range(5)) == sorted(index for (index,) in draws[5:])
    assert ExtraQuestions(keys, seed=4).draw(5, set()) != ExtraQuestions(keys, seed=3).draw(5, set())
    taken = {keys[0], keys[1]}
    drawn = ExtraQuestions(keys, seed=3).draw(3, taken)
    assert sorted(drawn) == [2, 3, 4] and taken == set(keys)


def test_extra_questions_skip_what_the_sampler_would_defer_unless_nothing_else_is_left() -> None:
    keys = [f"db\tq{index}" for index in range(4)]
    settled = {keys[1], keys[2]}
    extra = ExtraQuestions(keys, seed=0, would_defer=settled.__contains__)
    assert sorted(extra.draw(2, set())) == [0, 3]
    assert len(ExtraQuestions(keys, seed=0, would_defer=lambda key: True).draw(3, set())) == 3  # still drawn


# --- the flag -------------------------------------------------------------------------------------


def test_a_negative_count_is_refused_before_any_model_loads(tmp_path: Path) -> None:
    with pytest.raises(train.SetupError, match="--oversample_groups is a number of extra prompt groups"):
        train.main(["--output_dir", str(tmp_path / "out"), "--oversample_groups", "-1"])
    assert not (tmp_path / "out").exists()


def test_oversampling_is_refused_on_several_processes() -> None:
    agent, _, _ = train.parse_config(["--oversample_groups", "2"])
    check_launch(agent, SimpleNamespace(deepspeed=None, world_size=1))
    with pytest.raises(ValueError, match="--oversample_groups runs in one process, but this launch has 2"):
        check_launch(agent, SimpleNamespace(deepspeed=None, world_size=2))


# --- a real run -----------------------------------------------------------------------------------


class HalfSettledAgent(ScriptedAgent):
    """Answers the training set's first question right in every episode (its groups have no reward spread), every
    other question right on even generations and wrong on odd ones (spread in every group)."""

    settled = ""

    def turn(self, text: str, generation: int) -> str:
        user_message = text.split("<|im_start|>user", 1)[1]
        return super().turn(text, 0 if self.settled in user_message else generation)

    def install(self, trainer: Any) -> None:
        self.settled = trainer.train_dataset[0]["question"]
        super().install(trainer)


@pytest.mark.slow
@pytest.mark.parametrize(("sampling", "signal"), [("plain", "reward"), ("informative", "reward"), ("plain", "answers")])
def test_a_step_generates_an_extra_group_and_trains_on_the_one_with_spread(
        tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str], sampling: str, signal: str) -> None:
    agent = HalfSettledAgent()
    trained: list[dict[str, Any]] = []

    # 2 questions, a step of one group of 2 generated in one round, one extra group a round: each round holds both
    # questions (the extra skips the round's own), one settled and one not.
    argv = ["--output_dir", str(tmp_path), "--model", str(tiny_model_dir), "--max_questions", "2",
            "--num_generations", "2", "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2",
            "--max_completion_length", "1536", "--save_strategy", "no", "--report_to", "none", "--phase", "easy",
            "--oversample_groups", "1", "--sampling", sampling, "--group_signal", signal]
    adapter = train.main(argv, before_train=lambda trainer: agent.install_capturing(trainer, trained))
    steps = [entry for entry in read_jsonl(tmp_path / "easy" / "metrics.jsonl") if "loss" in entry]
    assert len(steps) == 2 == len(trained)
    for output in trained:  # per_device_train_batch_size x gradient_accumulation_steps rows, one whole group
        assert len(output["advantages"]) == output["completion_ids"].shape[0] == 2
        assert int(output["num_items_in_batch"]) == int((output["completion_mask"] * output["tool_mask"]).sum())
    for step in steps:
        assert step["oversample/generated_groups"] == 2
        assert step["rollout/episodes_per_s"] * step["step_time"] == pytest.approx(4)  # generated episodes
        # frac_reward_zero_std and episode/* count every generated group; oversample/* what was trained on
        assert step["oversample/trained_zero_advantage_share"] <= step["frac_reward_zero_std"]
        assert step["frac_reward_zero_std"] == step["episode/zero_advantage_groups"]
    if sampling == "plain":  # each round holds both questions: the settled one's group is dropped
        assert all(output["advantages"][0] != output["advantages"][1] for output in trained)
        assert all(step["oversample/kept_informative_groups"] == 1 for step in steps)
        assert all(step["oversample/trained_zero_advantage_share"] == 0.0 < step["frac_reward_zero_std"] == 0.5
                   for step in steps)
        # the settled question's group answered alike (all right); the one trained on did not
        assert all(step["oversample/trained_alike_answers_share"] == 0.0 for step in steps)
    # Every generated group reached the question history, the settled question's too (2 a step).
    history = json.loads((adapter / "question_history.json").read_text())
    assert sum(len(visits) for visits in history.values()) == 4
    if sampling == "plain":
        assert sorted(max(spread for _, _, spread in visits) == 0.0 for visits in history.values()) == [False, True]
    assert re.search(r"the model made \d+ tool calls in 8 episodes", capsys.readouterr().out)


def test_the_log_says_what_oversampling_adds_a_round_and_a_step() -> None:
    # train.py's default step: 16 groups generated in 4 rounds of 4, so extra groups come four times a step.
    defaults = SimpleNamespace(per_device_train_batch_size=6, gradient_accumulation_steps=16, steps_per_generation=4,
                               num_iterations=1, num_generations=6)
    assert oversampling_summary(8, defaults) == ("oversampling: 8 extra prompt groups a generation round of 4, 32 a "
                                                 "step: each round generates 3.00x the rows (and their KV-cache memory)")
    # The learning proof's step: one round of 16 groups.
    one_round = SimpleNamespace(**{**vars(defaults), "per_device_train_batch_size": 16,
                                   "gradient_accumulation_steps": 6, "steps_per_generation": 6})
    assert oversampling_summary(1, one_round).startswith("oversampling: 1 extra prompt group a generation round of 16, "
                                                         "1 a step: each round generates 1.06x")
