"""What a tool-loop generation call costs, fitted from the rows benchmarks/gpu_backends.py wrote.

    python benchmarks/fit_call_costs.py docs/gpu_measurements/multiturn_cap_24rows_seed3_2026-12-02b.json

For every backend, variant and batch size with at least three measured calls (the warm-up step left out), a
least-squares line through the calls' seconds against their decoding steps (the longest row's new tokens):
its intercept is the fixed cost of a call, its slope the cost of one decoding step. Per variant, also the share
of the decoded row-steps that wrote kept tokens. Rows written before the
benchmark split each call itself (``setup_s`` ... ``teardown_s``) can only be read this way; for rows that have
the split, the medians of its parts, the share of the calls' time they fix, and the steady decode step of calls
whose prompts share one length against those left-padded to the longest.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

MIN_CALLS = 3


def fit_call_costs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One fit per (backend, variant, batch) with at least MIN_CALLS calls after the warm-up step."""
    fits = []
    for row in rows:
        calls = [call for call in row.get("calls", []) if call["step"] >= 1]
        for batch in sorted({call["batch"] for call in calls}):
            same = [call for call in calls if call["batch"] == batch]
            steps = [call["new_tokens_max"] for call in same]
            if len(same) < MIN_CALLS or len(set(steps)) < 2:  # a line needs two distinct lengths
                continue
            slope, intercept = statistics.linear_regression(steps, [call["seconds"] for call in same])
            fits.append({"backend": row["backend"], "variant": row["variant"], "batch": batch, "calls": len(same),
                         "fixed_s_per_call": round(intercept, 3), "ms_per_decode_step": round(1000 * slope, 1)})
    return fits


def kept_row_step_share(row: dict[str, Any]) -> float | None:
    """Of the row-steps a variant's calls decoded (batch x the longest row's new tokens), the share that wrote a
    token some row kept: the rest is rows waiting, ended, for their call's longest row."""
    calls = [call for call in row.get("calls", []) if call["step"] >= 1]
    row_steps = sum(call["batch"] * call["new_tokens_max"] for call in calls)
    return round(sum(call["new_tokens_sum"] for call in calls) / row_steps, 2) if row_steps else None


def call_split(row: dict[str, Any]) -> dict[str, Any] | None:
    """Medians over a variant's calls after the warm-up step of the parts each call is split into (setup, prefill,
    the first two decode steps, teardown), the share of the calls' seconds those fixed parts take, and the range of
    the steady decode step (every call, the warm-up step's too) in calls with one prompt length and in calls with
    left-padded prompts. None for rows written before the benchmark recorded the split."""
    calls = [call for call in row.get("calls", []) if call["step"] >= 1 and "first_forwards_s" in call]
    if not calls:
        return None

    def fixed(call: dict[str, Any]) -> float:
        return call["setup_s"] + sum(call["first_forwards_s"][:3]) + call["teardown_s"]

    def steady_range(padded: bool) -> list[float] | None:
        steps = [call["steady_forward_ms"] for call in row["calls"] if call.get("steady_forward_ms") is not None
                 and (call["prompt_tokens_mean"] != call["prompt_tokens_max"]) == padded]
        return [min(steps), max(steps)] if steps else None

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    def forward(index: int) -> float:  # forward 0 is the prefill
        return median([call["first_forwards_s"][index] for call in calls if len(call["first_forwards_s"]) > index])

    return {"calls": len(calls), "setup_s": median([call["setup_s"] for call in calls]),
            "prefill_s": median([call["prefill_s"] for call in calls]),
            "first_decode_s": forward(1), "second_decode_s": forward(2),
            "teardown_s": median([call["teardown_s"] for call in calls]),
            "fixed_share": round(sum(map(fixed, calls)) / sum(call["seconds"] for call in calls), 2),
            "steady_ms_one_length": steady_range(padded=False), "steady_ms_padded": steady_range(padded=True)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", type=Path, help="a JSON file of benchmarks/gpu_backends.py --out")
    arguments = parser.parse_args(argv)
    if not arguments.rows.is_file():
        parser.error(f"no rows file at {arguments.rows}")
    columns = ["backend", "variant", "batch", "calls", "fixed_s_per_call", "ms_per_decode_step"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    rows = json.loads(arguments.rows.read_text())
    for fit in fit_call_costs(rows):
        print("| " + " | ".join(str(fit[column]) for column in columns) + " |")
    for row in rows:
        print(f"{row['backend']} {row['variant']}: kept share of the decoded row-steps {kept_row_step_share(row)}")
        if (split := call_split(row)) is not None:
            print(f"{row['backend']} {row['variant']}: per call (medians) {split}")


if __name__ == "__main__":
    main()
