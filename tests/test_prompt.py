"""prompt.py: the words the model reads. The default prompt is a contract: cached warm-ups are keyed by its
text and trained models have read it, so it changes only on purpose."""

from __future__ import annotations

from agent_env import DEFAULT_STEP_BUDGET
from prompt import first_observation, system_prompt

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
