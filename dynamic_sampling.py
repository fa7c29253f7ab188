"""DAPO's dynamic sampling: generate for more prompt groups than a step trains on, train on the groups that teach.

    oversampler = GroupOversampler(extra_groups, seed, would_defer)   # train.py, --oversample_groups N
    oversampler.install(trainer)                                      # wraps TRL's _generate_and_score_completions

A prompt group whose completions all earned the same reward has zero advantage and gives no gradient. Each
generation round (one call of TRL's ``_generate_and_score_completions``: the rows of ``steps_per_generation``
micro-batches) here generates ``extra_groups`` more groups than TRL asked for, then hands TRL back exactly as many
groups as it asked for: first the groups whose advantages differ (reward spread; with ``signal='answers'``, DAPO's own
filter, the groups where some episodes answered right and some did not), in generation order, then, only when there
are too few of those, the others. Whole groups are kept or dropped, never split. Generating more rows
costs little on a GPU, where decoding is launch-bound (a decode step at 96 rows costs 7.6 ms against 5.4 ms at 6,
docs/gpu.md); what a step trains on keeps its size.

What TRL 1.15 does that this relies on (trl/trainer/grpo_trainer.py, GRPOTrainer):

- ``_prepare_inputs`` calls ``_generate_and_score_completions`` once a round with the data loader's rows (a list of
  dataset rows, each question ``num_generations`` times in a row), then shuffles and splits every value of the
  returned dict by rows (``shuffle_sequence_dict``, ``split_tensor_dict``: each tensor of one dimension or more and
  each list is per row, a 0-d tensor is kept whole). A kept subset of rows is one more such cut, so ``keep_rows``
  slices exactly what TRL slices (and Unsloth's extra per-row keys, e.g. ``max_left_pad``, with them).
- Rewards are scored over every row of the call and the advantages computed group by group
  (``rewards.view(-1, num_generations)``), so extra groups change no other group's advantages (this project's
  ``scale_rewards='group'``, TRL's default; under 'batch' the std is taken over every generated row).
- ``num_items_in_batch``, the dapo / cispo loss normaliser, is the generation batch's loss tokens:
  ``accelerator.gather((completion_mask * tool_mask).sum()).sum()``, both masks already zeroed for truncated
  completions under ``mask_truncated_completions``; ``keep_rows`` counts it again over the kept rows. Every other
  scalar (the logged reward, ``frac_reward_zero_std``) is left as it was: it describes every generated group.
- What TRL computes per row before it returns (the old and reference log-probs, in the runs that need them: beta
  above 0, or a generation batch reused across optimizer steps) it computes for the extra rows too.

With oracle guidance (--guide_unsolved, oracle_guidance.py) the wrapped call is guidance's: every generated group
is guided first, and ``answers_of`` counts an oracle's row right, so a guided group is chosen as one that differs.

Every generated episode goes through the reward functions, so rollouts.jsonl, the episode/* metrics and the
informative sampler's history (training_logs.RolloutLogger.episode_metrics -> sampling.InformativeSampler.record)
see the dropped groups too. One process only: under several, TRL gathers the rewards of groups spread across ranks,
and a rank cannot drop a group another rank holds rows of (train.py refuses it, launch.check_launch).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from batching import episodes_per_generation, optimizer_steps_per_generation
from sampling import SPREAD_EPSILON, dataset_question_keys
from spider_data import question_key


@dataclass
class GroupSelection:
    """Which prompt groups of a generation round are trained on (indices in generation order)."""

    kept: list[int]
    generated: int
    informative: int  # generated groups that differ in the signal (advantages, or answers)
    kept_zero_advantage: int  # kept groups whose advantages are all alike, whatever the signal
    kept_alike_answers: int | None = None  # kept groups whose episodes all answered alike; None: answers not given

    def rows(self, group_size: int) -> list[int]:
        return [group * group_size + offset for group in self.kept for offset in range(group_size)]


def select_groups(advantages: torch.Tensor, group_size: int, keep: int, answers: Sequence[bool] | None = None,
                  signal: str = "reward") -> GroupSelection:
    """``keep`` groups of ``group_size`` consecutive rows: those that differ in ``signal`` first, in their order, then
    the others, only as many as are missing; the kept groups in generation order. Signal 'reward': the group's
    advantages differ. Signal 'answers' (DAPO's filter; needs each row's ``answers``, right or not): some of its
    episodes answered right and some did not.

    A group of equal rewards gets the same advantage in every row (the same arithmetic on the same numbers), but not
    always 0: (reward - mean) / (std + 1e-4) of a float32 mean's rounding error can reach 1e-3. So a group teaches
    something when its advantages differ, as the episode logs (training_logs.zero_advantage_share) and the
    informative sampler count reward spread."""
    if advantages.numel() % group_size or advantages.numel() // group_size < keep:
        raise ValueError(f"{advantages.numel()} rows do not make at least {keep} whole groups of {group_size}")
    if answers is not None and len(answers) != advantages.numel():
        raise ValueError(f"{len(answers)} answers for {advantages.numel()} rows")
    if signal == "answers" and answers is None:
        raise ValueError("signal 'answers' needs each row's answer (right or not)")
    groups = advantages.detach().reshape(-1, group_size)
    zero_advantage = [value <= SPREAD_EPSILON for value in (groups.max(dim=1).values - groups.min(dim=1).values).tolist()]
    alike_answers = (None if answers is None else
                     [len(set(answers[start:start + group_size])) == 1 for start in range(0, len(answers), group_size)])
    alike = alike_answers if signal == "answers" and alike_answers is not None else zero_advantage
    informative = [group for group, same in enumerate(alike) if not same]
    others = [group for group, same in enumerate(alike) if same]
    kept = sorted(informative[:keep] + others[:max(0, keep - len(informative))])
    return GroupSelection(kept, len(alike), len(informative), sum(zero_advantage[group] for group in kept),
                          None if alike_answers is None else sum(alike_answers[group] for group in kept))


def oversampling_summary(extra_groups: int, grpo: Any) -> str:
    """What --oversample_groups adds, for the phase's log: the extra groups come on top of every generation round,
    so a step of several rounds generates them several times over."""
    round_groups = episodes_per_generation(grpo) // grpo.num_generations
    per_step = extra_groups / optimizer_steps_per_generation(grpo)
    return (f"oversampling: {extra_groups} extra prompt group{'s' * (extra_groups != 1)} a generation round of "
            f"{round_groups}, {float(per_step):g} a step: each round generates "
            f"{(round_groups + extra_groups) / round_groups:.2f}x the rows (and their KV-cache memory)")


def keep_rows(output: dict[str, Any], rows: Sequence[int]) -> dict[str, Any]:
    """TRL's scored batch (``_generate_and_score_completions``' dict) cut to ``rows``: every per-row value (a
    tensor of one dimension or more, a list) sliced alike, ``num_items_in_batch`` counted again over the kept rows,
    every other value (None, a 0-d tensor, a number) as it was."""
    total = len(output["advantages"])
    index = torch.tensor(list(rows), dtype=torch.long)
    kept: dict[str, Any] = {}
    for key, value in output.items():
        if (isinstance(value, torch.Tensor) and value.ndim > 0) or isinstance(value, list | tuple):
            if len(value) != total:  # TRL's own split would cut it as rows too, and wrongly
                raise ValueError(f"scored batch entry {key!r} has {len(value)} rows, the batch {total}")
            kept[key] = value[index.to(value.device)] if isinstance(value, torch.Tensor) else [value[i] for i in rows]
        else:
            kept[key] = value
    if "num_items_in_batch" in output:
        kept["num_items_in_batch"] = loss_tokens(kept).to(output["num_items_in_batch"])
    return kept


def loss_tokens(output: dict[str, Any]) -> torch.Tensor:
    """The tokens the loss counts, as TRL's ``num_items_in_batch``: the completion tokens the model wrote (tool
    outputs, ``tool_mask`` 0, left out), of one process (the only one oversampling runs under)."""
    mask = output["completion_mask"]
    if output.get("tool_mask") is not None:
        mask = mask * output["tool_mask"]
    return mask.sum()


class ExtraQuestions:
    """The questions a round adds: dataset rows in passes over a seeded shuffle, skipping questions already in the
    round and, given ``would_defer`` (the informative sampler's ``should_defer``), questions whose last groups
    scored alike; when a whole pass' worth of candidates has been skipped, the next ones whatever they are (a
    dataset smaller than a round, or one the sampler has settled). Its place in the shuffle is not checkpointed: a
    resumed run starts a fresh pass."""

    def __init__(self, keys: Sequence[str], seed: int, would_defer: Callable[[str], bool] | None = None) -> None:
        self.keys = list(keys)
        self.would_defer = would_defer
        # Python's generator, not torch's: TRL's sampler draws its passes from torch.randperm with this same seed,
        # and the same stream would hand the extras the data loader's own order.
        self.random = random.Random(seed)
        self.queue: list[int] = []

    def draw(self, count: int, taken: set[str]) -> list[int]:
        """``count`` row indices; ``taken`` (the round's question keys) grows with them."""
        drawn: list[int] = []
        skipped = 0
        while len(drawn) < count:
            if not self.queue:
                self.queue = list(range(len(self.keys)))
                self.random.shuffle(self.queue)
            index = self.queue.pop()
            key = self.keys[index]
            unwanted = key in taken or (self.would_defer is not None and self.would_defer(key))
            if unwanted and skipped < len(self.keys):
                skipped += 1
                continue
            drawn.append(index)
            taken.add(key)
        return drawn


class GroupOversampler:
    """Generates ``extra_groups`` more prompt groups each round and keeps as many groups as TRL asked for (see the
    module docstring); logs oversample/* per optimizer step through TRL's metrics."""

    def __init__(self, extra_groups: int, seed: int, would_defer: Callable[[str], bool] | None = None,
                 answers_of: Callable[[], list[bool]] | None = None, signal: str = "reward") -> None:
        """``answers_of``: whether each episode of the round just scored answered right, in row order (the
        rollout logger's ``last_answers``); needed for ``signal`` 'answers', logged with either signal."""
        if extra_groups < 1:
            raise ValueError(f"extra_groups must be at least 1, got {extra_groups}")
        if signal == "answers" and answers_of is None:
            raise ValueError("signal 'answers' needs answers_of, each scored episode's answer (right or not)")
        self.extra_groups = extra_groups
        self.seed = seed
        self.would_defer = would_defer
        self.answers_of = answers_of
        self.signal = signal

    def install(self, trainer: Any) -> None:
        """Wrap this trainer's ``_generate_and_score_completions`` (TRL's ``_prepare_inputs`` calls it on the
        instance once a generation round). Evaluation batches are scored as they come."""
        dataset = trainer.train_dataset
        extra = ExtraQuestions(dataset_question_keys(dataset), self.seed, self.would_defer)
        group_size = trainer.num_generations
        args = trainer.args
        # TRL averages a metric's values over a log line's rounds; counts are scaled to one optimizer step.
        rounds_per_step = float(1 / optimizer_steps_per_generation(args))
        score = trainer._generate_and_score_completions

        @functools.wraps(score)
        def score_with_extra_groups(inputs: list[dict[str, Any]]) -> dict[str, Any]:
            if not trainer.model.training:
                return score(inputs)
            taken = {question_key(row["db_id"], row["question"]) for row in inputs}
            # dataset[i] applies the dataset's transform (the few-shot prompt of the moment), as the loader's reads do
            questions = [dataset[index] for index in extra.draw(self.extra_groups, taken)]
            # a group: the question num_generations times in a row
            extra_rows = [dict(row) for row in questions for _ in range(group_size)]
            output = score([*inputs, *extra_rows])
            answers = self.answers_of() if self.answers_of is not None else None
            selection = select_groups(output["advantages"], group_size, len(inputs) // group_size, answers,
                                      self.signal)
            metrics = trainer._metrics["train"]
            metrics["oversample/generated_groups"].append(selection.generated * rounds_per_step)
            kept_informative = len(selection.kept) - selection.kept_zero_advantage
            metrics["oversample/kept_informative_groups"].append(kept_informative * rounds_per_step)
            metrics["oversample/trained_zero_advantage_share"].append(
                selection.kept_zero_advantage / len(selection.kept))
            if selection.kept_alike_answers is not None:
                metrics["oversample/trained_alike_answers_share"].append(
                    selection.kept_alike_answers / len(selection.kept))
            return keep_rows(output, selection.rows(group_size))

        trainer._generate_and_score_completions = score_with_extra_groups
