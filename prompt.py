"""The words the model reads, in one place: the system prompt, the first observation, the answer-format help,
the few-shot header and the warm-up's closing turn. Tool outputs and tool errors are not here: each tool
writes its own (agent_env.py), and the tools' docstrings are their schemas.

    system_prompt(step_budget)              # the rules, built from the budget the episodes run with
    first_observation(["singer", "concert"])  # what SQLEnv.reset appends to the question

The prompt is a function of the run's settings, never a constant built at import: a run with
``--step_budget 5`` must tell the model 5. Training, the warm-up, eval and the few-shot examples all
build it here from their own budget. This module imports nothing from the project, so the environment
can use it too.
"""

from __future__ import annotations

from collections.abc import Sequence

# What format_answer (verifier.py) writes is what this asks for; tests/test_verifier.py checks they agree.
ANSWER_FORMAT_HELP = (
    "Write only the answer, with no extra words:\n"
    "- one value: the value alone, e.g. 42 or Paris\n"
    "- a list of values: separated by commas, e.g. Paris, Rome, Oslo "
    "(one value per line if a value contains a comma)\n"
    "- a table: one row per line, cells separated by ' | ', e.g. Paris | 3\n"
    "- NULL for a missing value; NONE if there are no rows; numbers as plain digits, e.g. 1234.5"
)
TABLES_LABEL = "Tables in this database:"
FEWSHOT_HEADER = "Examples of solved questions (other databases than yours):"
# What the assistant says after the answer is recorded: a short turn with no tool call ends TRL's tool loop.
CLOSING_MESSAGE = "Done."


def system_prompt(step_budget: int) -> str:
    """The system prompt for episodes of ``step_budget`` tool calls (no few-shot examples: fewshot.py adds them).

    The tools themselves are listed by the chat template (their schemas come from SQLEnv's docstrings), so
    the prompt does not list them again: every token here is read again on every turn of every episode.
    Cached warm-ups are keyed by this text, so a change to it retrains them.
    """
    return f"""You answer questions about a SQLite database by calling tools.

Rules:
- Look at the tables you need, query until you have the result, then call answer exactly once.
- After answer, stop: any further tool call is an error and lowers your score.
- You have at most {step_budget} tool calls.

{ANSWER_FORMAT_HELP}"""


def first_observation(table_names: Sequence[str]) -> str:
    """What ``SQLEnv.reset`` returns: TRL appends it to the question, so the model starts knowing the tables."""
    return f"\n\n{TABLES_LABEL} {', '.join(table_names)}"


def fewshot_text(rendered_examples: Sequence[str]) -> str:
    """The few-shot block of the system prompt: the header, then each rendered episode, numbered ("" for none)."""
    if not rendered_examples:
        return ""
    blocks = [f"Example {number}:\n{example}" for number, example in enumerate(rendered_examples, start=1)]
    return FEWSHOT_HEADER + "\n\n" + "\n\n".join(blocks)
