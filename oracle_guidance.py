"""Oracle guidance: a prompt group whose episodes all answered wrong trains on the oracle's episode in one row.

    guidance = OracleGuidance(tokenizer, env_factory, rewards_of, answers_of, scale_rewards)  # --guide_unsolved
    guidance.install(trainer)                                  # wraps TRL's _generate_and_score_completions

A group where no episode answered right has (almost) no reward spread, so it teaches nothing: about a fifth of the
1.5B's groups all through its mixed phases (docs/gpu.md, 2026-12-06i), the questions it most needs to learn. Here
the last row of each such group is replaced by the oracle's episode for its question (``policies.OraclePolicy``:
describe the gold tables, run the gold query, answer its result, close), scored by the same environment, and the
group's advantages are computed again: the oracle's row gets a positive advantage, the wrong ones a negative one.
This mixes an off-policy demonstration into the on-policy group, as LUFFY does (Yan et al., 2025, "Learning to
Reason under Off-Policy Guidance"); the warm-up trained on the same episodes (sft.py), so they are the model's own
format. A group with a right answer keeps its episodes (under ``scale_rewards`` 'batch' its advantages move with
the batch's spread). An oracle episode longer than ``max_completion_length`` is left out: the model could not have
written it within the budget.

The oracle's row is built as TRL's tool loop builds a row (trl/trainer/grpo_trainer.py, GRPOTrainer, 1.15): the
tokens of each assistant turn as generation leaves them under the stop rule (``chat_format.tool_call_text`` closed
by ``<|im_end|>``), ``tool_mask`` 1, then the tool replies as ``chat_format.tool_reply_ids`` renders them (TRL's
``_get_tool_suffix_ids``; tests/test_model_contract.py pins that the two agree), ``tool_mask`` 0. Its prompt must
be the prompt TRL generated from, token for token, else guidance stops with an error rather than train on a
mismatched row.

What it relies on in TRL's scored batch (see dynamic_sampling.py for the rest): rewards become advantages as
``(reward - group mean) / (std + 1e-4)``, std over the group (``scale_rewards`` 'group') or over every row
('batch'), or not divided ('none'); ``num_items_in_batch`` counts ``completion_mask * tool_mask``. No per-row
log-probabilities are in the batch when the generation round is one optimizer step and beta is 0 (the recipe):
with them (an old policy's or a reference model's) the oracle's row would need its own, so ``check_supported``
refuses those settings before any model loads. One process only, as for oversampling (launch.check_launch).

With ``episodes_of`` (train.py --guide_recovery) an unsolved group in which an episode had a query refused trains
on a recovery row instead: that episode's own tokens through the refusal's reply, kept as context (tool mask 0),
then the gold query, its result and the answer (``policies.RecoveryPolicy``, replayed in the environment, whose
replies must match the ones the model saw). The warm-up never shows a refused query, and after one the 1.5B never
queried again; the oracle's whole episode starts where the model already went another way.

With oversampling (dynamic_sampling.py, installed around guidance) every generated group, the extra ones too, is
guided before the round's groups are chosen: a guided group has advantages that differ, and
``answers_after_guidance`` counts its oracle row right, so under either group signal it is chosen beside the groups
whose own episodes differ, before groups all right. guide/* counts the generated groups, oversample/* the trained.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from agent_env import EpisodeRecord, SQLEnv, tool_methods
from batching import optimizer_steps_per_generation
from chat_format import close_tool_call_turn, grpo_chat_template, render_ids, tool_call_text, tool_reply_ids
from policies import OraclePolicy, RecoveryPolicy, ToolCall, play_episode
from prompt import CLOSING_MESSAGE
from training_logs import trl_advantages

ADVANTAGE_TOLERANCE = 0.02
# The keys of TRL's scored batch this module knows how to rebuild a row of; any other per-row value that runs
# along the completion (e.g. log-probabilities) would be left describing the replaced episode.
REBUILT_KEYS = frozenset({"completion_ids", "completion_mask", "tool_mask", "advantages", "num_items_in_batch"})
# Per-row values computed from the generated episodes that the oracle's row would need its own of: log-probabilities
# (an old policy's, a reference model's, vLLM's) and Unsloth's opt-in ScaleRL loss weights (from the group's rewards).
EPISODE_DERIVED_KEYS = ("old_per_token_logps", "ref_per_token_logps", "importance_sampling_ratio",
                        "sampling_per_token_logps", "unsloth_sample_weight")


@dataclass(frozen=True)
class OracleRow:
    """One oracle episode as a completion row: its tokens, which of them the model writes, and its reward."""

    prompt_ids: list[int]
    completion_ids: list[int]
    tool_mask: list[int]  # 1: a token of an assistant turn (trained), 0: a tool reply
    reward: float


def oracle_messages(row: dict[str, Any], env: SQLEnv) -> tuple[list[dict[str, Any]], float]:
    """The oracle's chat messages for one dataset row (prompt first, closed by a short final turn) and the
    environment's reward for them. Raises ValueError where the oracle does not answer right."""
    transcript = play_episode(env, row, OraclePolicy())
    if not transcript.episode.is_correct:
        raise ValueError(f"the oracle got {row['question']!r} wrong; the verifier and the gold disagree")
    return transcript.messages + [{"role": "assistant", "content": CLOSING_MESSAGE}], env.get_reward()


def assistant_turn_ids(tokenizer: Any, message: dict[str, Any]) -> list[int]:
    """The tokens generation leaves for one assistant message under the stop rule: a tool call cut at
    ``</tool_call>`` and closed with the end-of-turn token, or the text and the end-of-turn token."""
    if message.get("tool_calls"):
        function = message["tool_calls"][0]["function"]
        generated = tokenizer.encode(tool_call_text(function["name"], function["arguments"]), add_special_tokens=False)
        return close_tool_call_turn(generated, tokenizer)
    return tokenizer.encode(message["content"], add_special_tokens=False) + [tokenizer.eos_token_id]


def episode_row(tokenizer: Any, messages: list[dict[str, Any]], reward: float) -> OracleRow:
    """A whole conversation as the tool loop's row: the prompt (up to the first assistant turn, with the
    generation prompt), then each assistant turn and the tool replies after it."""
    template = grpo_chat_template(tokenizer)
    first_turn = next(index for index, message in enumerate(messages) if message["role"] == "assistant")
    prompt_ids = render_ids(tokenizer, messages[:first_turn], template=template, tools=tool_methods(SQLEnv()),
                            add_generation_prompt=True)
    completion, mask = completion_tokens(tokenizer, template, messages, first_turn)
    return OracleRow(prompt_ids, completion, mask, reward)


def completion_tokens(tokenizer: Any, template: str, messages: list[dict[str, Any]],
                      first_turn: int) -> tuple[list[int], list[int]]:
    """The tool loop's completion tokens for ``messages[first_turn:]`` (an assistant turn first) and their tool
    mask: each assistant turn (1) and the tool replies after it (0)."""
    completion: list[int] = []
    mask: list[int] = []
    position = first_turn
    while position < len(messages):
        turn = assistant_turn_ids(tokenizer, messages[position])
        completion += turn
        mask += [1] * len(turn)
        position += 1
        replies = []
        while position < len(messages) and messages[position]["role"] == "tool":
            replies.append(messages[position])
            position += 1
        if replies:
            reply = tool_reply_ids(tokenizer, template, replies)
            completion += reply
            mask += [0] * len(reply)
    return completion, mask


def reply_ends(tool_mask: Sequence[int], length: int) -> list[int]:
    """Where each tool reply of a completion row ends (exclusive), within its first ``length`` tokens: the runs of
    tool-mask 0, one per tool call the loop ran."""
    return [index for index in range(1, length + 1)
            if tool_mask[index - 1] == 0 and (index == length or tool_mask[index] == 1)]


def first_refused_query(episode: EpisodeRecord) -> int | None:
    """The index among the episode's calls of its first query SQLite (or the environment) refused, if any."""
    return next((index for index, step in enumerate(episode.steps)
                 if step.tool == "query" and step.error is not None and not step.after_episode), None)


def recovery_messages(row: dict[str, Any], env: SQLEnv, prefix: Sequence[ToolCall]) -> tuple[list[dict[str, Any]],
                                                                                                 float]:
    """The episode that replays ``prefix`` (the model's calls through its refused query), then runs the gold query
    and answers its result, closed by a short final turn, and its reward. Raises ValueError where it does not end
    right (the step budget ran out, or the replay went otherwise)."""
    transcript = play_episode(env, row, RecoveryPolicy(prefix=tuple(prefix)))
    if not transcript.episode.is_correct:
        raise ValueError(f"the recovery of {row['question']!r} did not answer right")
    return transcript.messages + [{"role": "assistant", "content": CLOSING_MESSAGE}], env.get_reward()


def unsolved_groups(answers: Sequence[bool], group_size: int) -> list[int]:
    """The groups (indices) where no episode answered right."""
    return [start // group_size for start in range(0, len(answers), group_size)
            if not any(answers[start:start + group_size])]


def check_supported(agent: Any, grpo: Any) -> None:
    """Raise ValueError, saying what to change, for settings under which TRL's batch holds per-row log-probabilities,
    which the oracle's row would lack (train.py calls it before any model loads; launch.check_launch refuses
    several processes)."""
    if grpo.beta != 0.0:
        raise ValueError(f"--guide_unsolved needs --beta 0 (got {grpo.beta}): the reference model's log-probabilities "
                         "of the oracle's row are not computed")
    if agent.fast_inference or grpo.use_vllm:
        raise ValueError("--guide_unsolved does not run with --fast_inference yet: vLLM's sampling log-probabilities "
                         "of the oracle's row do not exist")
    if optimizer_steps_per_generation(grpo).numerator != 1:  # a round of one optimizer step or part of one
        raise ValueError("--guide_unsolved needs every generation round to lie within one optimizer step "
                         "(--gradient_accumulation_steps a multiple of --steps_per_generation x --num_iterations; TRL "
                         "then keeps no old log-probabilities): leave --steps_per_generation and --num_iterations at "
                         "their defaults")


def replace_rows(output: dict[str, Any], replacements: dict[int, OracleRow], pad_id: int, group_size: int,
                 scale_rewards: str, rewards: Sequence[float]) -> dict[str, Any]:
    """TRL's scored batch with the given rows' completions replaced by oracle rows, the completion tensors padded
    to the longest row, and every advantage and ``num_items_in_batch`` computed again from ``rewards`` (each row's,
    in batch order) with the replaced rows' rewards put in."""
    unknown = sorted(key for key, value in output.items() if key not in REBUILT_KEYS and (
        (key in EPISODE_DERIVED_KEYS and value is not None)
        or (key not in ("prompt_ids", "prompt_mask") and isinstance(value, torch.Tensor) and value.ndim == 2
            and value.shape[1] == output["completion_ids"].shape[1])))
    if unknown:
        raise ValueError(f"TRL's scored batch holds per-token values guidance cannot rebuild: {unknown}")
    completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
    tool_mask = output.get("tool_mask")
    if tool_mask is None:
        tool_mask = torch.ones_like(completion_mask)
    width = max([completion_ids.shape[1], *(len(row.completion_ids) for row in replacements.values())])
    grow = width - completion_ids.shape[1]
    completion_ids = torch.nn.functional.pad(completion_ids, (0, grow), value=pad_id)
    completion_mask = torch.nn.functional.pad(completion_mask, (0, grow), value=0)
    tool_mask = torch.nn.functional.pad(tool_mask, (0, grow), value=1)
    new_rewards = list(rewards)
    for index, row in replacements.items():
        length = len(row.completion_ids)
        completion_ids[index] = pad_id
        completion_ids[index, :length] = torch.tensor(row.completion_ids, dtype=completion_ids.dtype)
        completion_mask[index] = 0
        completion_mask[index, :length] = 1
        tool_mask[index] = 1
        tool_mask[index, :length] = torch.tensor(row.tool_mask, dtype=tool_mask.dtype)
        new_rewards[index] = row.reward
    advantages = torch.tensor(trl_advantages(new_rewards, group_size, scale_rewards))
    rebuilt = {**output, "completion_ids": completion_ids, "completion_mask": completion_mask,
               "advantages": advantages.to(output["advantages"])}
    if output.get("tool_mask") is not None:
        rebuilt["tool_mask"] = tool_mask
    if "num_items_in_batch" in output:
        rebuilt["num_items_in_batch"] = (completion_mask * tool_mask).sum().to(output["num_items_in_batch"])
    return rebuilt


def unpadded_prompt(output: dict[str, Any], index: int) -> list[int]:
    """Row ``index``'s prompt ids without TRL's left padding."""
    return output["prompt_ids"][index][output["prompt_mask"][index].bool()].tolist()


class OracleGuidance:
    """Replaces one row of every unsolved group by the oracle's episode (see the module docstring); logs
    guide/* per optimizer step through TRL's metrics."""

    def __init__(self, tokenizer: Any, env_factory: Callable[[], SQLEnv], rewards_of: Callable[[], list[float]],
                 answers_of: Callable[[], list[bool]], scale_rewards: str,
                 episodes_of: Callable[[], list[EpisodeRecord]] | None = None) -> None:
        """``rewards_of`` and ``answers_of``: each episode of the round just scored, its reward and whether it
        answered right, in row order (the rollout logger's ``last_rewards`` and ``last_answers``). With
        ``episodes_of`` (their records, the logger's ``last_episodes``: --guide_recovery), an unsolved group with a
        refused query trains on its recovery instead of the oracle's whole episode (``recovery_row``)."""
        self.tokenizer = tokenizer
        self.env = env_factory()  # one environment for every oracle episode: each reset closes the last database
        self.rewards_of = rewards_of
        self.answers_of = answers_of
        self.episodes_of = episodes_of
        self.scale_rewards = scale_rewards
        self._played: dict[str, OracleRow] = {}
        self.last_guided_rows: list[int] = []  # the rows of the round last scored that hold an oracle episode
        self.last_too_long = 0  # the round's unsolved groups left as they were: the oracle's episode did not fit
        self.last_recovered = 0  # the round's unsolved groups guided by a recovery row

    def answers_after_guidance(self) -> list[bool]:
        """Whether each row of the round last scored answered right, an oracle's row counted right: what the
        oversampler (dynamic_sampling.py), installed around guidance, chooses groups by."""
        answers = list(self.answers_of())
        for index in self.last_guided_rows:
            answers[index] = True
        return answers

    def oracle_row(self, row: dict[str, Any]) -> OracleRow:
        """The oracle's row for a dataset row, played once per question and system prompt (questions come back)."""
        key = json.dumps([row["db_path"], row["question"], row["prompt"]], sort_keys=True, default=str)
        if key not in self._played:
            messages, reward = oracle_messages(row, self.env)
            self._played[key] = episode_row(self.tokenizer, messages, reward)
        return self._played[key]

    def recovery_row(self, inputs: list[dict[str, Any]], output: dict[str, Any], rows: range,
                     max_length: int | None) -> OracleRow | None:
        """The first of ``rows`` (one group) whose episode had a query refused, as it should have gone on: its own
        tokens through the refusal's reply, kept as context (tool mask 0: neither the mistake nor what led to it is
        trained), then the gold query, its result and the answer, trained. None where no episode had one, or where
        the row and its record disagree (a call without a reply), or the recovery does not fit ``max_length``.

        The oracle's whole episode shows the right way from the start, a state the model rarely reaches after
        the warm-up's habits; this row starts where the model went wrong: held-out, the 1.5B's refused episodes
        never queried again and none ended right (50 of 614 questions, seed 32, docs/gpu.md 2026-12-07f)."""
        episodes = self.episodes_of() if self.episodes_of is not None else []
        tool_mask = output.get("tool_mask")
        if len(episodes) != output["completion_ids"].shape[0] or tool_mask is None:
            return None
        last = rows[-1]
        for index in rows:
            episode = episodes[index]
            refused = first_refused_query(episode)
            if refused is None or unpadded_prompt(output, index) != unpadded_prompt(output, last):
                continue
            length = int(output["completion_mask"][index].sum())
            ends = reply_ends(tool_mask[index].tolist(), length)
            if len(ends) != len(episode.steps) or ends[refused] == length:
                continue  # a call without its reply, or the refusal's reply last: cut by the completion budget
            prefix = [ToolCall(step.tool, step.arguments, imitated=False) for step in episode.steps[:refused + 1]]
            try:
                messages, reward = recovery_messages(inputs[index], self.env, prefix)
            except ValueError:
                continue
            replayed = self.env.episode.steps[:refused + 1]
            if [(step.output, step.error) for step in replayed] != [(step.output, step.error)
                                                                    for step in episode.steps[:refused + 1]]:
                continue  # the replies would not be the ones the model's tokens go on from
            turns = [position for position, message in enumerate(messages) if message["role"] == "assistant"]
            continuation, mask = completion_tokens(self.tokenizer, grpo_chat_template(self.tokenizer), messages,
                                                   turns[refused + 1])
            cut = ends[refused]
            completion = output["completion_ids"][index, :cut].tolist() + continuation
            if max_length is not None and len(completion) > max_length:
                continue
            return OracleRow(unpadded_prompt(output, last), completion, [0] * cut + mask, reward)
        return None

    def guided_output(self, inputs: list[dict[str, Any]], output: dict[str, Any], group_size: int,
                      max_length: int | None = None) -> tuple[dict[str, Any], int]:
        """The scored batch with each unsolved group's last row replaced (where the oracle's completion fits
        ``max_length`` tokens), and how many groups were."""
        self.last_guided_rows, self.last_too_long, self.last_recovered = [], 0, 0
        answers, rewards = self.answers_of(), self.rewards_of()
        if len(answers) != len(inputs) or len(rewards) != len(inputs):
            raise ValueError(f"{len(answers)} answers and {len(rewards)} rewards for {len(inputs)} scored rows")
        # The rewards must be the ones TRL turned into these advantages, or recomputing them changes other groups.
        # Not to the last bit: a group of equal rewards gets (reward - mean) / 1e-4, a float32 mean's rounding error
        # blown up to as much as 1e-3 either way (dynamic_sampling.select_groups); a second weighted reward would
        # move whole groups' advantages by tenths.
        expected = torch.tensor(trl_advantages(rewards, group_size, self.scale_rewards))
        if not torch.allclose(expected, output["advantages"].detach().float().cpu(), atol=ADVANTAGE_TOLERANCE):
            raise ValueError("the rollout logger's rewards do not give TRL's advantages; guidance needs the "
                             "environment's reward to be the only weighted reward")
        replacements = {}
        for group in unsolved_groups(answers, group_size):
            index = group * group_size + group_size - 1
            recovery = (self.recovery_row(inputs, output, range(index - group_size + 1, index + 1), max_length)
                        if self.episodes_of is not None else None)
            if recovery is not None:
                replacements[index] = recovery
                self.last_recovered += 1
                continue
            oracle = self.oracle_row(inputs[index])
            if max_length is not None and len(oracle.completion_ids) > max_length:
                self.last_too_long += 1
                continue
            if oracle.prompt_ids != unpadded_prompt(output, index):
                raise ValueError(f"the oracle's prompt for {inputs[index]['question']!r} renders to other tokens than "
                                 "the prompt TRL generated from; guidance cannot build its row")
            replacements[index] = oracle
        if not replacements:
            return output, 0
        self.last_guided_rows = sorted(replacements)
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        return replace_rows(output, replacements, pad_id, group_size, self.scale_rewards, rewards), len(replacements)

    def install(self, trainer: Any) -> None:
        """Wrap this trainer's ``_generate_and_score_completions`` (training batches only)."""
        group_size = trainer.num_generations
        rounds_per_step = float(1 / optimizer_steps_per_generation(trainer.args))
        score = trainer._generate_and_score_completions

        @functools.wraps(score)
        def score_with_guidance(inputs: list[dict[str, Any]]) -> dict[str, Any]:
            output = score(inputs)
            if not trainer.model.training:
                return output
            guided, count = self.guided_output(inputs, output, group_size, trainer.args.max_completion_length)
            metrics = trainer._metrics["train"]
            metrics["guide/guided_groups"].append(count * rounds_per_step)
            metrics["guide/guided_share"].append(count / (len(inputs) // group_size))
            metrics["guide/too_long_groups"].append(self.last_too_long * rounds_per_step)
            if self.episodes_of is not None:
                metrics["guide/recovery_groups"].append(self.last_recovered * rounds_per_step)
            return guided

        trainer._generate_and_score_completions = score_with_guidance

