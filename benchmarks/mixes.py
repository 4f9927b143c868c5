"""Simulated targets with known answer distributions, shared by the sequential and calibration benchmarks.

Each case has a known answer distribution: a correct answer, wrong answers with their own
probabilities, and an unparseable share (the agent's reply holds no answer). Its true
majority probability p* is the largest answer probability (unparseable mass in the
denominator, never an answer), and the truth a label is judged against is where p* lies
relative to the band (``frontier_qa.probing._posterior`` defines p*). It is exact here, not
estimated: the distribution is the agent.

Case kinds, as an agent shows them:

* ``easy``: right with probability U(0.9, 1), the rest on 1–3 wrong answers;
* ``band``: right with U(0.3, 0.8), the rest on 2–5 wrong answers;
* ``hard``: right with U(0, 0.25), the rest scattered over 6–14 wrong answers of similar size
  (Dirichlet(2)): the multi-way scatter where p̂ of a few samples over-states p*;
* ``uniform``: right with U(0, 1), the rest on 1–8 wrong answers.

On top, in every kind but ``easy``, a fifth of the cases tie their two largest answers, and
in every kind 12 % of cases give no parseable answer 5–40 % of the time and 2 % almost
never do (70–100 %).

Mixes: ``realistic`` (60 % easy, 15 % hard, 25 % band), ``balanced`` (p ~ U(0, 1)) and
``frontier-heavy`` (15 % easy, 15 % hard, 70 % band): the three the sampling benchmarks probe.

The mixes are *fair*: nothing a policy can read gives the kind away. A case's ``topic`` is
drawn from :data:`TOPICS` independently of its kind (before, the kind itself was the topic,
and a topic-aware prior or predictor read the answer off it), and its ``hint`` is a noisy
difficulty signal, the kind a curriculum's own estimate is: the right answer's probability
moved by N(0, :data:`HINT_NOISE`) on the logit scale. Written into a cases file as
``predicted_pass_rate`` only when asked (``row(stream, hint=True)``), so a benchmark measures
what the signal is worth. Topics and hints come from their own random stream: the answer
distributions are the same as the leaky mixes' were, case for case.

Sample ``i`` of a case is a pure function of (stream seed, case id, i): every policy sees the
same sample stream (common random numbers), and re-sampling with a new stream seed gives
fresh, independent samples.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

BAND = (0.3, 0.8)
MIXES: dict[str, dict[str, float]] = {
    "realistic": {"easy": 0.60, "hard": 0.15, "band": 0.25},
    "balanced": {"uniform": 1.0},
    "frontier-heavy": {"easy": 0.15, "hard": 0.15, "band": 0.70},
}
RIGHT = "7"
TOPICS = ("arithmetic", "dates", "units", "geometry", "logic", "strings")
HINT_NOISE = 1.0
TUNING_SEEDS = (1, 2, 3)
HELD_OUT_SEEDS = (4, 5, 6)


@dataclass(frozen=True)
class SimCase:
    """A simulated case: its id, kind, answer distribution (``None``: unparseable), topic and hint.

    ``topic`` is independent of ``kind``; ``hint`` is a noisy guess of the right answer's
    probability (see the module docstring). Neither enters the truth.
    """

    id: str
    kind: str
    answers: tuple[tuple[str | None, float], ...]
    topic: str = "arithmetic"
    hint: float = 0.5

    @property
    def p_star(self) -> float:
        """True majority probability: the largest answer probability."""
        return max((p for a, p in self.answers if a is not None), default=0.0)

    @property
    def truth(self) -> str:
        """``"below"``, ``"in"`` or ``"above"``: where p* lies relative to :data:`BAND`."""
        lo, hi = BAND
        return "below" if self.p_star < lo else "above" if self.p_star > hi else "in"

    def row(self, stream: int, *, hint: bool = False) -> dict[str, object]:
        """The case as a line of a cases file, its distribution and stream in the metadata.

        The kind is kept in the metadata for scoring only (the probe never reads metadata to
        decide); ``hint=True`` adds the noisy difficulty signal as ``predicted_pass_rate``.
        """
        line: dict[str, object] = {
            "id": self.id, "prompt": f"Scripted case {self.id} (stream {stream}): what is the answer?",
            "topic": self.topic, "reference": RIGHT,
            "metadata": {"answers": [list(a) for a in self.answers], "stream": stream, "p_star": self.p_star,
                         "truth": self.truth, "kind": self.kind}}
        if hint:
            line["predicted_pass_rate"] = round(self.hint, 4)
        return line


def _uniform(seed: int | str, case_id: str, index: int) -> float:
    digest = hashlib.blake2b(f"{seed}:{case_id}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def draw(answers: Sequence[Sequence[object]], stream: int | str, case_id: str, index: int) -> str | None:
    """Sample ``index`` of a case: inverse CDF of its distribution at a hashed uniform."""
    u, acc = _uniform(stream, case_id, index), 0.0
    for answer, p in answers:
        acc += float(p)  # type: ignore[arg-type]
        if u < acc:
            return None if answer is None else str(answer)
    last = answers[-1][0]
    return None if last is None else str(last)


def make_case(kind: str, rng: np.random.Generator, case_id: str) -> SimCase:
    """One case of ``kind`` (see the module docstring)."""
    if kind == "easy":
        right, wrong, conc = rng.uniform(0.9, 1.0), int(rng.integers(1, 4)), 1.0
    elif kind == "band":
        right, wrong, conc = rng.uniform(0.3, 0.8), int(rng.integers(2, 6)), 1.0
    elif kind == "hard":
        right, wrong, conc = rng.uniform(0.0, 0.25), int(rng.integers(6, 15)), 2.0
    elif kind == "uniform":
        right, wrong, conc = rng.uniform(0.0, 1.0), int(rng.integers(1, 9)), 1.0
    else:
        raise ValueError(f"unknown case kind {kind!r}")
    probs = [right, *((1.0 - right) * rng.dirichlet(np.full(wrong, conc)))]
    if kind != "easy" and rng.random() < 0.2:  # a tie between the two largest answers
        first, second = np.argsort(probs)[::-1][:2]
        probs[first] = probs[second] = (probs[first] + probs[second]) / 2
    r = rng.random()
    silent = rng.uniform(0.05, 0.4) if r < 0.12 else rng.uniform(0.7, 1.0) if r < 0.14 else 0.0
    answers = [(RIGHT if j == 0 else str(100 + j), float(p) * (1.0 - silent)) for j, p in enumerate(probs)]
    if silent:
        answers.append((None, float(silent)))
    return SimCase(case_id, kind, tuple(answers))


def right_share(case: SimCase) -> float:
    """The right answer's probability (what a pass rate estimates)."""
    return sum(p for a, p in case.answers if a == RIGHT)


def make_cases(mix: str, n: int, seed: int) -> list[SimCase]:
    """``n`` cases of ``mix`` (ids ``mix-seed-i``), reproducible from ``seed``.

    Topics and hints are drawn from a stream of their own (see the module docstring).
    """
    rng = np.random.default_rng([seed, 7])
    side = np.random.default_rng([seed, 11])
    kinds, weights = zip(*MIXES[mix].items(), strict=True)
    chosen = rng.choice(kinds, size=n, p=weights)
    cases = []
    for i, kind in enumerate(chosen):
        case = make_case(str(kind), rng, f"{mix}-{seed}-{i}")
        p = min(max(right_share(case), 1e-3), 1 - 1e-3)
        logit = math.log(p / (1 - p)) + float(side.normal(0.0, HINT_NOISE))
        topic = TOPICS[int(side.integers(len(TOPICS)))]
        cases.append(replace(case, topic=topic, hint=1.0 / (1.0 + math.exp(-logit))))
    return cases


def write_cases(cases: Sequence[SimCase], path: Path, stream: int, *, hint: bool = False) -> Path:
    """A cases file for ``frontier-qa probe --curriculum`` (``hint``: with ``predicted_pass_rate``)."""
    path.write_text("".join(json.dumps(c.row(stream, hint=hint)) + "\n" for c in cases), encoding="utf-8")
    return path


def mix_arguments(doc: str | None) -> argparse.ArgumentParser:
    """The in-process benchmarks' command line: ``--cases`` per mix and ``--seeds`` (add more arguments to it)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="cases per mix and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    return parser
