"""Which questions a GRPO step trains on: groups that teach something.

A prompt group whose completions all earned the same reward (all right, or all wrong) has zero advantage and
gives no gradient; by the end of a phase 35-60% of the groups were such (docs/learning_proof.md). In the spirit of
DAPO's dynamic sampling, but without generating groups only to throw them away, ``InformativeSampler`` remembers
each question's last visits and defers a question whose last ``window`` groups all had zero reward spread (or, with
``signal='answers'``, all answered alike: all right or all wrong, whatever their shaped rewards): the slot goes to the
next question in the pass. A deferred question comes back after ``max_deferrals`` deferrals (the
model may have changed), and a question never seen is always served. The stream has the same length as TRL's own
sampler's, so a run sees the same number of episodes; informative questions are simply visited more often than
ones the model has settled. DAPO's way itself, generating extra groups and training on the ones with reward spread,
is ``dynamic_sampling.py`` (--oversample_groups), which asks this sampler which extra questions to prefer.

A question is visited at most once when a phase draws fewer groups than it has questions (the real 1.5B's mixed
phase: 480 groups over 934 questions), so its own history never defers it. With ``question_classes`` (its Spider
hardness, --defer_by_class) a question never visited is deferred with the probability that its class's last
``class_window`` groups taught nothing (capped at ``max_class_deferral``, so that no class leaves the stream): from a
strong warm-up most easy groups are all right, and their slots go to classes whose groups still differ. The classes'
windows start empty in each process (a resumed run fills them again from its next groups). With ``question_ranks``
(--screen_questions: what one greedy episode of the start model made of each question before the phase,
question_screen.py) every pass serves the questions in rank order, random within a rank: the ones the model got
wrong first, so that a phase shorter than a pass trains mostly on questions whose groups will differ.

It yields indices exactly as TRL's ``RepeatSampler`` does (a chunk of ``groups_per_batch`` questions, each index
``num_generations`` times in a row, the chunk ``repeat_count`` times), and decides each chunk when the data loader
asks for it, from the outcomes recorded so far (``record``, which train.py feeds from every scored batch). The
history is keyed by database and question, so it carries from one curriculum phase to the next
(``save``/``load``, next to the adapter).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Sampler

from spider_data import question_key

HISTORY_FILENAME = "question_history.json"
SPREAD_EPSILON = 1e-9  # rewards closer than this count as equal (no advantage)
UNRANKED = 1  # the pass position of a question given no rank (question_screen.py ranks the wrong ones 0, right 2)
# What a group must differ in to have taught something (--group_signal): any reward spread, the shaped part included
# (what TRL's advantages see under scale_rewards='group'), or its answers, some right and some not (DAPO's filter).
GROUP_SIGNALS = ("reward", "answers")


@dataclass
class Visit:
    """One prompt group of a question: how many of its completions were right, and its reward spread."""

    correct: int
    completions: int
    reward_spread: float

    def taught_nothing(self, signal: str, guided: bool = False) -> bool:
        """Whether the group was alike in what ``signal`` (one of GROUP_SIGNALS) names. Under oracle guidance
        (``guided``) a group all wrong trained on the oracle's episode, so only one all right taught nothing."""
        if guided and self.correct == 0:
            return False
        if signal == "answers":
            return self.correct in (0, self.completions)
        return self.reward_spread < SPREAD_EPSILON


@dataclass
class QuestionRecord:
    visits: list[Visit] = field(default_factory=list)
    deferrals: int = 0  # deferrals since it was last served


class InformativeSampler(Sampler[int]):
    """TRL's sampler contract, deferring questions whose last groups taught nothing (see the module docstring)."""

    def __init__(self, question_keys: Sequence[str], num_generations: int, groups_per_batch: int, repeat_count: int,
                 seed: int, window: int = 1, max_deferrals: int = 2, signal: str = "reward",
                 guided: bool = False, question_classes: Mapping[str, str] | None = None, class_window: int = 32,
                 max_class_deferral: float = 0.75, question_ranks: Mapping[str, int] | None = None) -> None:
        if window < 1 or max_deferrals < 0:
            raise ValueError(f"window must be at least 1 and max_deferrals at least 0, got {window} and "
                             f"{max_deferrals}")
        if class_window < 4 or not 0.0 <= max_class_deferral < 1.0:
            raise ValueError(f"class_window must be at least 4 and max_class_deferral in [0, 1), got {class_window} "
                             f"and {max_class_deferral}")
        missing = [key for key in question_keys if key not in question_classes] if question_classes is not None else []
        if missing:
            raise ValueError(f"{len(missing)} questions have no class, e.g. {missing[0]!r}")
        if signal not in GROUP_SIGNALS:
            raise ValueError(f"signal must be one of {', '.join(GROUP_SIGNALS)}, got {signal!r}")
        if groups_per_batch > len(question_keys):
            raise ValueError(f"a batch of {groups_per_batch} prompt groups needs at least that many questions, "
                             f"got {len(question_keys)}")
        self.keys = list(question_keys)
        self.num_generations = num_generations
        self.groups_per_batch = groups_per_batch
        self.repeat_count = repeat_count
        self.window = window
        self.max_deferrals = max_deferrals
        self.signal = signal
        self.guided = guided  # --guide_unsolved: an all-wrong group is given the oracle's episode (oracle_guidance.py)
        self.generator = torch.Generator().manual_seed(seed)
        self.records: dict[str, QuestionRecord] = {}
        self.classes = dict(question_classes) if question_classes is not None else None
        self.max_class_deferral = max_class_deferral
        # Per class, whether each of its last groups taught nothing (Visit.taught_nothing), newest last.
        self.class_outcomes: dict[str, deque[bool]] = {}
        self.class_window = class_window
        # A pass's order: lower ranks first (a question without a rank at UNRANKED).
        self.ranks = dict(question_ranks) if question_ranks is not None else None
        self.deferred = 0  # deferrals since the last take_counts()
        self.deferred_by_class = 0
        self.served = 0

    def __len__(self) -> int:
        chunks = len(self.keys) // self.groups_per_batch
        return chunks * self.groups_per_batch * self.num_generations * self.repeat_count

    def __iter__(self) -> Iterator[int]:
        queue: list[int] = []
        for _ in range(len(self.keys) // self.groups_per_batch):
            chunk: list[int] = []
            while len(chunk) < self.groups_per_batch:
                if not queue:  # a new pass over every question, in a fresh order
                    queue = self.pass_order()
                    queue = [index for index in queue if index not in chunk]
                index = queue.pop(0)
                key = self.keys[index]
                if self.should_defer(key):
                    self.records[key].deferrals += 1
                    self.deferred += 1
                    continue
                if self.defer_by_class(key):
                    self.records.setdefault(key, QuestionRecord()).deferrals += 1
                    self.deferred_by_class += 1
                    continue
                self.records.setdefault(key, QuestionRecord()).deferrals = 0
                chunk.append(index)
            self.served += len(chunk)
            for _ in range(self.repeat_count):
                for index in chunk:
                    yield from [index] * self.num_generations

    def pass_order(self) -> list[int]:
        """Every question's index once, shuffled; with ranks, sorted by rank (stable: shuffled within a rank)."""
        order = torch.randperm(len(self.keys), generator=self.generator).tolist()
        if self.ranks is not None:
            order.sort(key=lambda index: self.ranks.get(self.keys[index], UNRANKED))
        return order

    def should_defer(self, key: str) -> bool:
        """Whether a question's last ``window`` groups all taught nothing (no reward spread, or with signal
        'answers' all right or all wrong; under guidance all right only), and it has not yet been deferred
        ``max_deferrals`` times since it was last served."""
        record = self.records.get(key)
        if record is None or len(record.visits) < self.window or record.deferrals >= self.max_deferrals:
            return False
        return all(visit.taught_nothing(self.signal, self.guided) for visit in record.visits[-self.window:])

    def class_share_alike(self, name: str) -> float | None:
        """The share of the class's last ``class_window`` groups that taught nothing; None until a quarter of the
        window has been seen (too few groups to go by)."""
        outcomes = self.class_outcomes.get(name, ())
        if len(outcomes) < self.class_window // 4:
            return None
        return sum(outcomes) / len(outcomes)

    def defer_by_class(self, key: str) -> bool:
        """With question classes: whether to defer a question never visited, drawn with the probability that its
        class's recent groups taught nothing (at most ``max_class_deferral``), and only ``max_deferrals`` times."""
        if self.classes is None:
            return False
        record = self.records.get(key)
        if record is not None and (record.visits or record.deferrals >= self.max_deferrals):
            return False
        share = self.class_share_alike(self.classes[key])
        if share is None:
            return False
        return torch.rand((), generator=self.generator).item() < min(share, self.max_class_deferral)

    def record(self, keys: Sequence[str], rewards: Sequence[float], correct: Sequence[bool]) -> None:
        """The outcomes of one scored batch, completion by completion, in TRL's order (group after group)."""
        if not len(keys) == len(rewards) == len(correct):
            raise ValueError(f"keys, rewards and correct differ in length: {len(keys)}, {len(rewards)}, {len(correct)}")
        size = self.num_generations
        for start in range(0, len(keys) - size + 1, size):
            group_keys = set(keys[start:start + size])
            if len(group_keys) != 1:
                raise ValueError(f"completions {start}-{start + size - 1} belong to several questions: {group_keys}")
            group_rewards = rewards[start:start + size]
            visit = Visit(sum(map(bool, correct[start:start + size])), size, max(group_rewards) - min(group_rewards))
            self.records.setdefault(keys[start], QuestionRecord()).visits.append(visit)
            if self.classes is not None and keys[start] in self.classes:
                outcomes = self.class_outcomes.setdefault(self.classes[keys[start]], deque(maxlen=self.class_window))
                outcomes.append(visit.taught_nothing(self.signal, self.guided))

    def take_counts(self) -> dict[str, float]:
        """Questions served and deferred since the last call (for the step's log line); with classes, also those
        deferred by their class and each class's recent share of groups that taught nothing."""
        counts = {"sampler/served": float(self.served), "sampler/deferred": float(self.deferred)}
        if self.classes is not None:
            counts["sampler/deferred_by_class"] = float(self.deferred_by_class)
            for name in sorted(self.class_outcomes):
                if (share := self.class_share_alike(name)) is not None:
                    counts[f"sampler/class_alike/{name or 'unclassified'}"] = share
        self.served = self.deferred = self.deferred_by_class = 0
        return counts

    def save(self, folder: Path) -> Path:
        path = Path(folder) / HISTORY_FILENAME
        path.write_text(json.dumps({key: [[v.correct, v.completions, v.reward_spread] for v in record.visits]
                                    for key, record in self.records.items() if record.visits}), encoding="utf-8")
        return path

    def load(self, folder: Path) -> int:
        """Visits of an earlier phase (its folder's history, if any); returns how many questions it knew."""
        path = Path(folder) / HISTORY_FILENAME
        if not path.is_file():
            return 0
        for key, visits in json.loads(path.read_text(encoding="utf-8")).items():
            self.records.setdefault(key, QuestionRecord()).visits.extend(Visit(*visit) for visit in visits)
        return len(self.records)


def dataset_question_keys(dataset: Any) -> list[str]:
    """The ``question_key`` of every row of a ``datasets.Dataset``, in row order (read from its columns,
    untransformed)."""
    return [question_key(db_id, question) for db_id, question in
            zip(dataset.data.column("db_id").to_pylist(), dataset.data.column("question").to_pylist(), strict=True)]


def dataset_question_classes(dataset: Any) -> list[str]:
    """The Spider hardness class ('' where it has none) of every row of a ``datasets.Dataset``, in row order, from
    its 'hardness' column (spider_data's rows have one)."""
    if "hardness" not in dataset.column_names:
        raise ValueError("--defer_by_class needs each question's class: the training rows have no 'hardness' column")
    return dataset.data.column("hardness").to_pylist()


def question_sampler(grpo: Any, dataset: Any, start_adapter: Path | None,
                     resumed_checkpoint: Path | None = None, signal: str = "reward",
                     guided: bool = False, by_class: bool = False,
                     ranks: Mapping[str, int] | None = None) -> InformativeSampler:
    """A phase's question sampler (used under --sampling informative; it records every group either way), for the
    rows of a ``datasets.Dataset`` under GRPOConfig ``grpo``, with the history of the checkpoint a resumed run
    continues (which holds its start adapter's history too) or else of the phase its start adapter came from.
    ``by_class``: questions never visited are deferred by their hardness class's recent groups (--defer_by_class);
    ``ranks``: each pass's order (--screen_questions)."""
    keys = dataset_question_keys(dataset)
    classes = dict(zip(keys, dataset_question_classes(dataset), strict=True)) if by_class else None
    sampler = InformativeSampler(keys, grpo.num_generations, grpo.generation_batch_size // grpo.num_generations,
                                 grpo.num_iterations * grpo.steps_per_generation, grpo.seed, signal=signal,
                                 guided=guided, question_classes=classes, question_ranks=ranks)
    for folder in (resumed_checkpoint, start_adapter):
        if folder is not None and sampler.load(folder):
            print(f"[train] question history of {len(sampler.records)} questions from {folder}", flush=True)
            break
    return sampler
