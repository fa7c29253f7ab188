"""sampling.py: questions whose last groups taught nothing wait; they come back; the stream keeps TRL's shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from trl.trainer.utils import RepeatSampler

from sampling import InformativeSampler
from spider_data import question_key

KEYS = [question_key("db", f"question {index}") for index in range(8)]


def chunks(stream: list[int], sampler: InformativeSampler) -> list[list[int]]:
    """The questions of each chunk, in order (each index appears num_generations x repeat_count times)."""
    per_chunk = sampler.groups_per_batch * sampler.num_generations * sampler.repeat_count
    return [list(dict.fromkeys(stream[start:start + per_chunk])) for start in range(0, len(stream), per_chunk)]


def settle(sampler: InformativeSampler, index: int, *, right: bool) -> None:
    """One visit of question ``index`` whose completions all scored alike: all right or all wrong."""
    size = sampler.num_generations
    sampler.record([KEYS[index]] * size, [1.0 if right else 0.0] * size, [right] * size)


def test_with_no_history_the_stream_has_trls_shape_and_length() -> None:
    sampler = InformativeSampler(KEYS, num_generations=3, groups_per_batch=2, repeat_count=2, seed=0)
    trl = RepeatSampler(KEYS, mini_repeat_count=3, batch_size=2, repeat_count=2, seed=0)
    stream = list(sampler)
    assert len(stream) == len(sampler) == len(trl) == len(list(trl))
    first = stream[:12]  # one chunk: 2 questions x 3 generations, twice
    assert first[:6] == first[6:] and first[:3] == [first[0]] * 3 and first[3:6] == [first[3]] * 3
    assert sorted(question for chunk in chunks(stream, sampler) for question in chunk) == list(range(8))


def test_a_question_all_right_in_its_last_visit_is_deferred() -> None:
    sampler = InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=0)
    order = torch.randperm(8, generator=torch.Generator().manual_seed(0)).tolist()  # the sampler's first pass
    settle(sampler, order[0], right=True)
    first_chunk = chunks(list(sampler), sampler)[0]
    assert order[0] not in first_chunk
    assert first_chunk == order[1:3]
    assert sampler.take_counts()["sampler/deferred"] >= 1


def test_a_question_all_wrong_is_deferred_too_but_one_with_reward_spread_is_not() -> None:
    sampler = InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=0)
    order = torch.randperm(8, generator=torch.Generator().manual_seed(0)).tolist()
    settle(sampler, order[0], right=False)
    sampler.record([KEYS[order[1]]] * 2, [1.0, 0.0], [True, False])  # half right: a gradient to follow
    assert chunks(list(sampler), sampler)[0] == order[1:3]


def test_under_the_answers_signal_a_group_all_wrong_is_deferred_whatever_its_shaping() -> None:
    by_reward, by_answers = (InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=0,
                                                signal=signal) for signal in ("reward", "answers"))
    order = torch.randperm(8, generator=torch.Generator().manual_seed(0)).tolist()
    for sampler in (by_reward, by_answers):  # both wrong; one of them saw the gold result (+0.05)
        sampler.record([KEYS[order[0]]] * 2, [0.07, 0.02], [False, False])
    assert chunks(list(by_reward), by_reward)[0] == order[0:2]  # reward spread: served
    assert chunks(list(by_answers), by_answers)[0] == order[1:3]  # answered alike: it waits
    with pytest.raises(ValueError, match="signal must be one of reward, answers"):
        InformativeSampler(KEYS, 2, 1, 1, seed=0, signal="accuracy")


def test_under_oracle_guidance_only_a_question_all_right_waits() -> None:
    sampler = InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=0, signal="answers",
                                 guided=True)
    order = torch.randperm(8, generator=torch.Generator().manual_seed(0)).tolist()
    settle(sampler, order[0], right=False)  # its group trained on the oracle's episode: served again
    settle(sampler, order[1], right=True)
    assert chunks(list(sampler), sampler)[0] == [order[0], order[2]]


def test_a_deferred_question_comes_back() -> None:
    sampler = InformativeSampler(KEYS[:2], num_generations=1, groups_per_batch=1, repeat_count=1, seed=0,
                                 max_deferrals=2)
    settle(sampler, 0, right=True)
    served = []
    for _ in range(4):  # four passes of two questions: question 0 is skipped twice, then served
        served += list(sampler)
    assert served.count(0) >= 1  # it came back, though its history still says it taught nothing
    assert served.count(1) > served.count(0)  # the other question took the slots it gave up


def test_decisions_use_outcomes_recorded_while_the_stream_runs() -> None:
    """The data loader asks for a chunk at a time: what was scored meanwhile counts for the next chunk."""
    sampler = InformativeSampler(KEYS, num_generations=1, groups_per_batch=1, repeat_count=1, seed=3)
    stream = iter(sampler)
    first = next(stream)
    order = torch.randperm(8, generator=torch.Generator().manual_seed(3)).tolist()
    settle(sampler, order[1], right=True)  # the next one in line has just been settled
    assert first == order[0] and next(stream) == order[2]


def test_a_group_of_mixed_questions_is_refused() -> None:
    sampler = InformativeSampler(KEYS, num_generations=2, groups_per_batch=1, repeat_count=1, seed=0)
    with pytest.raises(ValueError, match="several questions"):
        sampler.record([KEYS[0], KEYS[1]], [1.0, 0.0], [True, False])


def test_history_carries_to_the_next_phase(tmp_path: Path) -> None:
    easy = InformativeSampler(KEYS[:4], num_generations=2, groups_per_batch=1, repeat_count=1, seed=0)
    settle(easy, 2, right=True)
    easy.save(tmp_path)
    mixed = InformativeSampler(KEYS, num_generations=2, groups_per_batch=1, repeat_count=1, seed=0)
    assert mixed.load(tmp_path) == 1
    assert mixed.should_defer(KEYS[2]) and not mixed.should_defer(KEYS[3])
    assert InformativeSampler(KEYS, 2, 1, 1, seed=0).load(tmp_path / "nowhere") == 0


def test_bad_settings_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="at least that many questions"):
        InformativeSampler(KEYS[:2], num_generations=2, groups_per_batch=3, repeat_count=1, seed=0)
    with pytest.raises(ValueError, match="window"):
        InformativeSampler(KEYS, num_generations=2, groups_per_batch=1, repeat_count=1, seed=0, window=0)


CLASSES = {key: "easy" if index < 4 else "hard" for index, key in enumerate(KEYS)}


def test_by_class_a_question_never_visited_waits_when_its_class_settles() -> None:
    """At most one visit a question (fewer groups than questions), so only its class's record can say it would be
    all right: unseen easy questions give most slots to hard ones, and none is skipped past max_deferrals."""
    sampler = InformativeSampler(KEYS, num_generations=2, groups_per_batch=1, repeat_count=1, seed=0,
                                 signal="answers", guided=True, question_classes=CLASSES, class_window=8,
                                 max_class_deferral=0.75)
    for _ in range(8):  # easy: every group all right; hard: every group split
        sampler.record([KEYS[0]] * 2, [1.0, 1.0], [True, True])
        sampler.record([KEYS[5]] * 2, [1.0, 0.0], [True, False])
    assert sampler.class_share_alike("easy") == 1.0 and sampler.class_share_alike("hard") == 0.0
    served = [question for _ in range(50) for question in dict.fromkeys(sampler)]
    easy, hard = (sum(1 for question in served if CLASSES[KEYS[question]] == name) for name in ("easy", "hard"))
    # Easy waits with probability 0.75 and at most max_deferrals (2) times in a row: served about 1 in 2.3 times.
    assert hard > 1.5 * easy
    assert easy > 0  # the cap keeps the class in the stream
    counts = sampler.take_counts()
    assert counts["sampler/deferred_by_class"] > 0 and counts["sampler/class_alike/easy"] == 1.0


def test_by_class_needs_enough_groups_and_leaves_visited_questions_to_their_own_record() -> None:
    sampler = InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=0,
                                 signal="answers", question_classes=CLASSES, class_window=8)
    order = torch.randperm(8, generator=torch.Generator().manual_seed(0)).tolist()
    sampler.record([KEYS[0]] * 2, [1.0, 1.0], [True, True])  # one easy group: a quarter of the window is two
    assert sampler.class_share_alike("easy") is None
    assert chunks(list(sampler), sampler)[0] == [index for index in order if index != 0][:2]
    sampler.records.clear()
    sampler.record([KEYS[1]] * 2, [1.0, 0.0], [True, False])  # visited, with spread: never deferred by its class
    for _ in range(4):
        sampler.record([KEYS[2]] * 2, [1.0, 1.0], [True, True])
    assert not any(sampler.defer_by_class(KEYS[1]) for _ in range(20))


def test_without_classes_the_stream_is_the_plain_informative_one() -> None:
    plain = InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=4)
    assert "sampler/deferred_by_class" not in plain.take_counts()
    with_classes = InformativeSampler(KEYS, num_generations=2, groups_per_batch=2, repeat_count=1, seed=4,
                                      question_classes=CLASSES)
    assert list(plain) == list(with_classes)  # no class has groups yet: nothing drawn, the same order


def test_by_class_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="have no class"):
        InformativeSampler(KEYS, 2, 1, 1, seed=0, question_classes={KEYS[0]: "easy"})
    with pytest.raises(ValueError, match="max_class_deferral"):
        InformativeSampler(KEYS, 2, 1, 1, seed=0, question_classes=CLASSES, max_class_deferral=1.0)


def test_the_phase_sampler_reads_each_questions_class_from_the_rows() -> None:
    from types import SimpleNamespace

    from datasets import Dataset

    from sampling import question_sampler
    rows = Dataset.from_dict({"db_id": ["db"] * 4, "question": [f"question {index}" for index in range(4)],
                              "hardness": ["easy", "easy", "hard", "extra"]})
    grpo = SimpleNamespace(num_generations=2, generation_batch_size=4, num_iterations=1, steps_per_generation=1,
                           seed=0)
    sampler = question_sampler(grpo, rows, None, by_class=True)
    assert sampler.classes == {KEYS[0]: "easy", KEYS[1]: "easy", KEYS[2]: "hard", KEYS[3]: "extra"}
    assert question_sampler(grpo, rows, None).classes is None
    with pytest.raises(ValueError, match="no 'hardness' column"):
        question_sampler(grpo, rows.remove_columns("hardness"), None, by_class=True)



def test_ranked_questions_are_served_first_in_every_pass_and_shuffled_within_their_rank() -> None:
    """--screen_questions: the questions the start model got wrong (rank 0) open each pass; an unranked one comes
    after them, beside rank 1; the rest of the stream (its length, the deferrals) is the plain informative one."""
    keys = KEYS
    ranks = {keys[5]: 0, keys[2]: 0, keys[7]: 0, keys[0]: 2, keys[1]: 2, keys[3]: 2, keys[4]: 2}  # keys[6]: unranked
    sampler = InformativeSampler(keys, num_generations=2, groups_per_batch=1, repeat_count=1, seed=3,
                                 question_ranks=ranks)
    served = [keys[index] for index in list(sampler)[::2]]
    assert len(served) == len(keys)
    assert set(served[:3]) == {keys[5], keys[2], keys[7]}
    assert served[3] == keys[6]
    orders = {tuple(InformativeSampler(keys, 2, 1, 1, seed=seed, question_ranks=ranks).pass_order()[:3])
              for seed in range(6)}
    assert len(orders) > 1  # random within rank 0
    assert list(InformativeSampler(keys, 2, 2, 1, seed=4, question_ranks=None)) == \
        list(InformativeSampler(keys, 2, 2, 1, seed=4))
