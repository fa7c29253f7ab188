"""prompt.py: the words the model reads. The default prompt is a contract: cached warm-ups are keyed by its
text and trained models have read it, so it changes only on purpose. And the prompt is built from the run's
settings: ``--step_budget 5`` reaches training, the warm-up, eval and the few-shot examples alike."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402  (imports unsloth first, as train.py must)
import sft  # noqa: E402, I001  (after train: it loads transformers)
import eval.__main__ as eval_command  # noqa: E402
from agent_env import DEFAULT_STEP_BUDGET  # noqa: E402
from curriculum import load_curriculum, select_phase  # noqa: E402
from fewshot import choose_examples, play_examples  # noqa: E402
from policies import OraclePolicy, ToolCall  # noqa: E402
from prompt import first_observation, system_prompt  # noqa: E402
from spider_data import load_split  # noqa: E402

# The system prompt as agent_env.SYSTEM_PROMPT held it, built at import, before prompt.py.
PROMPT_BEFORE_PROMPT_PY = (
    "You answer questions about a SQLite database by calling tools.\n\nRules:\n- Look at the tables you need, "
    "query until you have the result, then call answer exactly once.\n- After answer, stop: any further tool call "
    "is an error and lowers your score.\n- You have at most 10 tool calls.\n\nWrite only the answer, with no extra "
    "words:\n- one value: the value alone, e.g. 42 or Paris\n- a list of values: separated by commas, e.g. Paris, "
    "Rome, Oslo (one value per line if a value contains a comma)\n- a table: one row per line, cells separated by "
    "' | ', e.g. Paris | 3\n- NULL for a missing value; NONE if there are no rows; numbers as plain digits, "
    "e.g. 1234.5"
)


def test_the_default_prompt_is_the_text_models_were_trained_on() -> None:
    assert system_prompt(DEFAULT_STEP_BUDGET) == PROMPT_BEFORE_PROMPT_PY


def test_the_prompt_states_the_budget_it_is_built_with() -> None:
    assert "at most 5 tool calls" in system_prompt(5)
    assert "10" not in system_prompt(5)
    assert system_prompt(5).replace("at most 5 ", "at most 10 ") == system_prompt(10)


def test_the_first_observation_lists_the_tables_after_the_question() -> None:
    assert first_observation(["singer", "concert"]) == "\n\nTables in this database: singer, concert"


class SystemPromptRecorder:
    """The oracle, noting the system message of every conversation it is asked to continue."""

    name = "oracle"

    def __init__(self) -> None:
        self.oracle = OraclePolicy()
        self.seen: list[str] = []

    def start(self, row: dict[str, Any]) -> None:
        self.oracle.start(row)

    def next_call(self, messages: list[dict[str, Any]]) -> ToolCall | None:
        self.seen.append(messages[0]["content"])
        return self.oracle.next_call(messages)


def assert_states_a_budget_of_5(system_messages: list[str]) -> None:
    assert system_messages
    for message in system_messages:
        assert message.startswith(system_prompt(5)) and "10 tool calls" not in message


def test_a_step_budget_of_5_reaches_training_the_warm_up_eval_and_the_fewshot_examples(tmp_path: Path) -> None:
    agent, _, _ = train.parse_config(["--step_budget", "5", "--max_questions", "2", "--output_dir", str(tmp_path)])
    phase, _ = select_phase(load_curriculum(agent.curriculum), "easy")
    dataset, fewshot, _ = train.prepare_dataset(agent, phase, fewshot_examples=2)
    assert fewshot.examples_text  # the few-shot system prompt: the base prompt, then the examples played at 5
    assert_states_a_budget_of_5([fewshot.system_prompt()])
    train_questions = load_split(agent.data_dir, "train", progress=False).usable()
    examples = play_examples(choose_examples(train_questions), step_budget=5)
    assert_states_a_budget_of_5([transcript.messages[0]["content"] for transcript in examples])
    # The rows as TRL reads them (through the few-shot transform), with the examples and after they retire.
    assert_states_a_budget_of_5([row["prompt"][0]["content"] for row in dataset])
    fewshot.enabled = False
    assert_states_a_budget_of_5([row["prompt"][0]["content"] for row in dataset])

    warmup = sft.warmup_conversations(agent, seed=0)
    assert_states_a_budget_of_5([conversation[0]["content"] for conversation in warmup])

    recorder = SystemPromptRecorder()
    eval_command.run(["--policy", "oracle", "--step-budget", "5", "--limit", "3", "--out", str(tmp_path / "eval"),
                      "--no-progress"], policy=recorder)
    assert_states_a_budget_of_5(recorder.seen)
