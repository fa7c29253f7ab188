"""How a phase's episodes are batched (batching.py): the length a phase announces, and how generation rounds and
optimizer steps nest."""

from __future__ import annotations

import types
from fractions import Fraction

import pytest

from batching import align_checkpoints, check_rounds_meet_steps, optimizer_steps_per_generation, phase_length


def settings(**changed: float) -> types.SimpleNamespace:
    """train.py's defaults for a mixed phase, two epochs: 16 groups a step, generated in rounds of 4."""
    return types.SimpleNamespace(**{"per_device_train_batch_size": 6, "gradient_accumulation_steps": 16,
                                    "steps_per_generation": 4, "num_iterations": 1, "num_generations": 6,
                                    "num_train_epochs": 2, "max_steps": -1} | changed)


def test_a_phase_says_how_many_steps_and_episodes_it_will_train(monkeypatch: pytest.MonkeyPatch) -> None:
    # The full Spider train split's easy+medium questions: two epochs of 16 groups a step, the last step part-full.
    assert phase_length(4114, settings()) == (
        "about 515 optimizer steps of 96 episodes (16 questions x 6): 49440 episodes")
    assert phase_length(4114, settings(max_steps=30)) == (
        "30 optimizer steps (--max_steps) of 96 episodes (16 questions x 6): 2880 episodes")
    assert phase_length(3, settings(per_device_train_batch_size=2, gradient_accumulation_steps=2,
                                    steps_per_generation=2, num_generations=4, num_train_epochs=1)) == (
        "about 3 optimizer steps of 4 episodes (1 question x 4): 12 episodes")
    monkeypatch.setenv("WORLD_SIZE", "2")  # every process generates its share of a step
    assert phase_length(4114, settings()).startswith("about 258 optimizer steps of 192 episodes (32 questions")


def test_a_phase_whose_generation_batches_train_several_steps_says_so() -> None:
    # The learning proof's generation batch of 96 (micro-batches of 16, 6 of them) trained as 3 steps of 32.
    three_steps = settings(per_device_train_batch_size=16, gradient_accumulation_steps=2, steps_per_generation=6)
    assert optimizer_steps_per_generation(three_steps) == 3
    assert phase_length(467, types.SimpleNamespace(**vars(three_steps) | {"max_steps": 90})) == (
        "90 optimizer steps (--max_steps) of 32 episodes, 3 to each generation batch of 96 episodes (16 questions x 6): "
        "2880 episodes")
    # One epoch of 467 questions: the same 2,802 episodes as in steps of 96, three times as many steps.
    one_epoch = types.SimpleNamespace(**vars(three_steps) | {"num_train_epochs": 1})
    assert phase_length(467, one_epoch).startswith("about 88 optimizer steps of 32 episodes")
    # GRPO's mu (TRL's num_iterations): every generation batch trained twice, twice the steps.
    twice = types.SimpleNamespace(**vars(one_epoch) | {"gradient_accumulation_steps": 6, "num_iterations": 2})
    assert optimizer_steps_per_generation(twice) == 2
    assert phase_length(467, twice) == ("about 59 optimizer steps of 96 episodes, 2 to each generation batch of 96 "
                                        "episodes (16 questions x 6): 2832 episodes, each trained 2 times")


@pytest.mark.parametrize(("steps_per_generation", "accumulation", "num_iterations", "ratio"), [
    (4, 16, 1, Fraction(1, 4)),  # train.py's default: a step in four rounds
    (16, 16, 1, Fraction(1)),  # TRL's default: a step in one round
    (6, 2, 1, Fraction(3)),  # a generation batch trains three steps
    (4, 4, 2, Fraction(2)),  # ... or twice over (GRPO's mu)
])
def test_rounds_and_steps_that_nest_are_accepted(steps_per_generation: int, accumulation: int, num_iterations: int,
                                                  ratio: Fraction) -> None:
    grpo = settings(steps_per_generation=steps_per_generation, gradient_accumulation_steps=accumulation,
                    num_iterations=num_iterations)
    check_rounds_meet_steps(grpo)
    assert optimizer_steps_per_generation(grpo) == ratio


def test_a_generation_round_that_ends_inside_a_step_is_refused_with_what_nests() -> None:
    with pytest.raises(ValueError) as error:
        check_rounds_meet_steps(settings(steps_per_generation=6, gradient_accumulation_steps=4,
                                         generation_batch_size=36))
    message = str(error.value)
    assert "a generation batch of 6 micro-batches (--steps_per_generation 6, i.e. --generation_batch_size 36)" in message
    assert "an optimizer step of 4 (--gradient_accumulation_steps): one must divide the other" in message
    assert "a multiple of 4 trains several optimizer steps on each generation batch" in message


@pytest.mark.parametrize(("changed", "save_steps"), [
    ({"steps_per_generation": 6, "gradient_accumulation_steps": 2}, 12),  # three steps a batch: whole batches
    ({"steps_per_generation": 6, "gradient_accumulation_steps": 2, "save_steps": 9}, 9),  # already whole
    ({}, 10),  # a step in rounds: every step ends a batch
    ({"steps_per_generation": 6, "gradient_accumulation_steps": 2, "save_steps": 0.5}, 0.5),  # a share of the run
])
def test_checkpoints_fall_between_generation_batches(changed: dict[str, float], save_steps: float) -> None:
    grpo = settings(**{"save_strategy": "steps", "save_steps": 10} | changed)
    align_checkpoints(grpo)
    assert grpo.save_steps == save_steps
