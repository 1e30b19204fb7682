"""Reciprocal Rank Fusion: scores, weights, per-leg ranks, determinism."""

from __future__ import annotations

import pytest

from kaynak.fusion import rrf


def test_rrf_scores_and_ranks() -> None:
    fused = rrf({"vector": [("a", 0.9), ("b", 0.8)], "keyword": [("b", 12.0), ("c", 3.0)]}, k=60)
    assert [f.id for f in fused] == ["b", "a", "c"]
    b = fused[0]
    assert b.ranks == {"vector": 2, "keyword": 1}
    assert b.scores == {"vector": 0.8, "keyword": 12.0}
    assert b.rrf == pytest.approx(1 / 62 + 1 / 61)
    a = fused[1]
    assert a.ranks == {"vector": 1} and "keyword" not in a.scores


def test_rrf_weights() -> None:
    legs = {"vector": [("a", 1.0)], "keyword": [("b", 1.0)]}
    assert [f.id for f in rrf(legs, weights={"vector": 1.0, "keyword": 2.0})] == ["b", "a"]
    assert [f.id for f in rrf(legs, weights={"vector": 2.0, "keyword": 1.0})] == ["a", "b"]
    zero = rrf(legs, weights={"vector": 0.0, "keyword": 1.0})
    assert zero[0].id == "b" and zero[1].rrf == 0.0 and zero[1].ranks == {"vector": 1}


def test_rrf_ties_are_deterministic_and_duplicates_ignored() -> None:
    fused = rrf({"x": [("b", 1.0), ("a", 1.0), ("b", 0.5)], "y": [("a", 1.0), ("b", 1.0)]})
    assert [f.id for f in fused] == ["a", "b"]  # equal RRF; both best rank 1 → id order
    assert fused[1].ranks == {"x": 1, "y": 2}


def test_rrf_empty_and_bad_k() -> None:
    assert rrf({}) == []
    assert rrf({"vector": [], "keyword": []}) == []
    with pytest.raises(ValueError):
        rrf({"v": [("a", 1.0)]}, k=0)
