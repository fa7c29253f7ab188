"""Few-shot example trajectories in the system prompt, the training questions drawn beside them, and the callback
that retires them.

The examples are real episodes: the oracle plays training questions through the real
environment, and the transcript (real tool output) is rendered in the same tool-call format the
model writes. They teach the protocol early (describe, query, answer once, then stop) and are
removed after the first epoch of the curriculum so the model does not lean on them.

How the switch reaches the trainer: the training dataset gets a transform that rewrites each
row's system message from a shared ``FewShotPrompt`` when the row is read; the callback flips
``FewShotPrompt.enabled`` at an epoch boundary, so every row read afterwards has no examples.

``training_questions`` reads the train split once for both: the questions a run trains on (GRPO's phases and the
warm-up alike) and the examples, chosen from the same usable questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from agent_env import SQLEnv
from chat_format import tool_call_text
from policies import OraclePolicy, Transcript, play_episode
from prompt import fewshot_text, system_prompt
from spider_data import AnswerType, SpiderExample, load_split, question_key, spread_sample, to_grpo_rows
from sql_structure import Hardness, tables_used

MAX_TOOL_OUTPUT_LINES = 8


@dataclass(frozen=True)
class ExampleWish:
    """What kind of training question makes a useful example."""

    hardness: Hardness
    answer_types: tuple[AnswerType, ...]
    min_tables: int


# A one-table count first, then a join answered with a list: the two patterns most questions need.
DEFAULT_WISHES = (
    ExampleWish(Hardness.EASY, (AnswerType.INTEGER,), min_tables=1),
    ExampleWish(Hardness.MEDIUM, (AnswerType.LIST, AnswerType.TEXT), min_tables=2),
)


def choose_examples(examples: Iterable[SpiderExample], count: int = 2) -> list[SpiderExample]:
    """Pick up to ``count`` usable training questions, one per wish, each from a different database."""
    chosen: list[SpiderExample] = []
    pool = [example for example in examples if example.is_usable]
    for wish in DEFAULT_WISHES[:count]:
        used_databases = {picked.db_id for picked in chosen}
        for example in pool:
            if (
                example.hardness == wish.hardness
                and example.answer_type in wish.answer_types
                and example.db_id not in used_databases
                and len(tables_used(example.gold_sql)) >= wish.min_tables
                and example.gold_row_count <= 5
            ):
                chosen.append(example)
                break
    return chosen


def play_examples(examples: list[SpiderExample], *, step_budget: int) -> list[Transcript]:
    """Run the oracle on each example through the real environment, under the run's step budget."""
    env = SQLEnv(step_budget=step_budget)
    return [play_episode(env, row, OraclePolicy()) for row in to_grpo_rows(examples, system_prompt(step_budget))]


def _shorten(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_TOOL_OUTPUT_LINES:
        return text
    return "\n".join(lines[:MAX_TOOL_OUTPUT_LINES] + [f"... ({len(lines) - MAX_TOOL_OUTPUT_LINES} more lines)"])


def render_transcript(transcript: Transcript) -> str:
    """One episode as text, tool calls written exactly as the model writes them."""
    parts = [transcript.messages[1]["content"].strip()]
    for message in transcript.messages[2:]:
        if message["role"] == "assistant":
            for call in message["tool_calls"]:
                parts.append(tool_call_text(call["function"]["name"], call["function"]["arguments"]))
        elif message["role"] == "tool":
            parts.append(f"<tool_response>\n{_shorten(message['content'])}\n</tool_response>")
    return "\n".join(parts)


def render_examples(transcripts: list[Transcript]) -> str:
    return fewshot_text([render_transcript(transcript) for transcript in transcripts])


@dataclass
class FewShotPrompt:
    """The system prompt with or without the examples; the switch is shared with the callback."""

    examples_text: str
    base_prompt: str  # prompt.system_prompt for the run's step budget
    enabled: bool = True
    example_questions: frozenset[str] = field(default_factory=frozenset)

    def system_prompt(self) -> str:
        if self.enabled and self.examples_text:
            return f"{self.base_prompt}\n\n{self.examples_text}"
        return self.base_prompt

    def apply(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """A ``datasets`` transform: give each row's prompt the current system message."""
        system = {"role": "system", "content": self.system_prompt()}
        rewritten = dict(batch)
        rewritten["prompt"] = [[system] + [m for m in prompt if m["role"] != "system"] for prompt in batch["prompt"]]
        return rewritten


def build_fewshot_prompt(train_examples: list[SpiderExample], count: int = 2, *, step_budget: int) -> FewShotPrompt:
    """Choose, play and render the examples; ``count=0`` gives a prompt without examples. The base prompt
    and the examples' episodes both follow ``step_budget``, the budget the run's own episodes have."""
    chosen = choose_examples(train_examples, count) if count > 0 else []
    return FewShotPrompt(
        examples_text=render_examples(play_examples(chosen, step_budget=step_budget)),
        base_prompt=system_prompt(step_budget),
        example_questions=frozenset(example.question for example in chosen),
    )


def training_questions(agent: Any, hardness: Sequence[str], fewshot_examples: int, *, hold_out_examples: bool,
                       seen: frozenset[str] = frozenset()) -> tuple[list[SpiderExample], FewShotPrompt, str]:
    """The questions a run trains on, its few-shot prompt and the split's summary, from one read of the train split
    (train.py's settings ``agent``: data_dir, max_gold_rows, max_questions, step_budget).

    The questions are the usable ones of ``hardness`` whose gold result has at most --max_gold_rows rows, evenly
    spaced down to --max_questions; the examples are chosen from every usable question. ``hold_out_examples``
    leaves the examples' own questions out (GRPO: the prompt shows how they are answered; the warm-up imitates
    them as well). Questions whose key (spider_data.question_key) is in ``seen`` come last: only where the others
    number fewer than --max_questions do they fill the rest, evenly spaced too. ValueError when no question is left.
    """
    split = load_split(agent.data_dir, "train", hardness=hardness)
    usable = split.usable()
    fewshot = build_fewshot_prompt(usable, fewshot_examples, step_budget=agent.step_budget)
    held_out = fewshot.example_questions if hold_out_examples else frozenset()
    questions = [example for example in usable
                 if example.gold_row_count <= agent.max_gold_rows and example.question not in held_out]
    unseen, fill = [], []
    for example in questions:
        (fill if question_key(example.db_id, example.question) in seen else unseen).append(example)
    if fill:
        wanted = len(questions) if agent.max_questions is None else min(agent.max_questions, len(questions))
        questions = spread_sample(unseen, wanted) + spread_sample(fill, max(0, wanted - len(unseen)))
    else:
        questions = spread_sample(questions, agent.max_questions)
    if not questions:
        raise ValueError(f"no usable {'+'.join(hardness)} training questions in {agent.data_dir}:\n{split.summary()}")
    return questions, fewshot, split.summary()


class FewShotSchedulerCallback(TrainerCallback):
    """Turns the few-shot examples off once the curriculum has trained ``retire_after_epochs`` epochs.

    ``epochs_before_phase`` is how many curriculum epochs earlier phases trained, so the count
    runs from the start of the curriculum: with the defaults, ``--phase mixed`` (after one easy
    epoch) trains without examples from its first step.
    """

    def __init__(self, prompt: FewShotPrompt, retire_after_epochs: float = 1.0, epochs_before_phase: float = 0.0):
        self.prompt = prompt
        self.retire_after_epochs = retire_after_epochs
        self.epochs_before_phase = epochs_before_phase

    def _update(self, phase_epoch: float) -> None:
        curriculum_epoch = self.epochs_before_phase + phase_epoch
        self.prompt.enabled = curriculum_epoch < self.retire_after_epochs

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._update(state.epoch or 0.0)  # state.epoch is restored on --resume

    def on_epoch_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        # state.epoch can be a hair under the integer at the boundary; round it to the epoch just finished.
        self._update(round(state.epoch or 0.0, 2))
