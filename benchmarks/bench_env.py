"""Tool calls per second through SQLEnv on a real Spider database (and on the built-in data).

    python -m pytest benchmarks/bench_env.py --benchmark-only

Each benchmark runs one tool call on a fresh episode's environment; the printed figure is calls
per second from pytest-benchmark's mean.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env import DEFAULT_STEP_BUDGET, SQLEnv
from prompt import system_prompt
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows

SPIDER_DB = "college_2"  # a larger real database: 11 tables, thousands of rows


def episode_env(data_dir: Path, db_id: str | None = None) -> tuple[SQLEnv, dict]:
    split = load_split(data_dir, "train", db_ids=[db_id] if db_id else None, limit=1, progress=False)
    row = to_grpo_rows(split.usable(), system_prompt(DEFAULT_STEP_BUDGET))[0]
    env = SQLEnv(step_budget=10**9)  # the budget would end the episode mid-benchmark
    env.reset(**row)
    return env, row


def report(benchmark, label: str) -> None:
    calls_per_second = 1.0 / benchmark.stats.stats.mean
    benchmark.extra_info["calls_per_second"] = round(calls_per_second, 1)
    print(f"\n{label}: {calls_per_second:,.0f} calls/s")


@pytest.mark.parametrize("tool", ["describe", "sample", "query", "answer"])
def test_tool_calls_per_second_on_real_spider(benchmark, spider_path: Path, tool: str) -> None:
    env, row = episode_env(spider_path, SPIDER_DB)
    table = env._require_database().table_names()[0]
    calls = {
        "describe": lambda: env.describe(table),
        "sample": lambda: env.sample(table),
        "query": lambda: env.query(row["gold_sql"]),
        "answer": lambda: (env.reset(**row), env.answer("42")),
    }
    benchmark(calls[tool])
    report(benchmark, f"{tool} on Spider {SPIDER_DB}")


def test_reset_per_second_on_builtin_data(benchmark) -> None:
    env, row = episode_env(BUILTIN_DATA_DIR)
    benchmark(lambda: env.reset(**row))
    report(benchmark, "reset on built-in data")
