"""Fusion: RRF and convex combination of normalised scores; weights, per-leg ranks, determinism."""

from __future__ import annotations

import pytest

from kaynak.fusion import convex, fuse, rrf


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


def test_convex_tmm_uses_the_theoretical_minimum() -> None:
    legs = {"vector": [("a", 0.9), ("b", 0.5)], "keyword": [("b", 10.0), ("c", 5.0)]}
    fused = convex(legs, weights={"vector": 0.5, "keyword": 0.5}, normalization="tmm")
    by_id = {f.id: f for f in fused}
    # vector: (s + 1) / (0.9 + 1); keyword: s / 10
    assert by_id["a"].score == pytest.approx(0.5 * 1.0)
    assert by_id["b"].score == pytest.approx(0.5 * 1.5 / 1.9 + 0.5 * 1.0)
    assert by_id["c"].score == pytest.approx(0.5 * 0.5)
    assert [f.id for f in fused] == ["b", "a", "c"]
    assert by_id["b"].ranks == {"vector": 2, "keyword": 1} and by_id["b"].scores == {"vector": 0.5, "keyword": 10.0}


def test_convex_minmax_and_depth_independence_of_tmm() -> None:
    legs = {"vector": [("a", 0.9), ("b", 0.5)], "keyword": [("b", 10.0), ("c", 5.0)]}
    mm = {f.id: f.score for f in convex(legs, weights={"vector": 0.5, "keyword": 0.5}, normalization="minmax")}
    assert mm == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.0})
    deeper = {"vector": [*legs["vector"], ("d", 0.1)], "keyword": [*legs["keyword"], ("d", 1.0)]}
    shallow = {f.id: f.score for f in convex(legs, normalization="tmm")}
    deep = {f.id: f.score for f in convex(deeper, normalization="tmm")}
    assert {i: deep[i] for i in shallow} == pytest.approx(shallow)  # tmm: reading deeper changes no score


def test_convex_flat_and_empty_legs() -> None:
    assert convex({}) == []
    fused = convex({"vector": [("a", 0.3)], "keyword": []}, normalization="minmax")
    assert [f.id for f in fused] == ["a"] and fused[0].score == pytest.approx(1.0)
    with pytest.raises(ValueError):
        convex({"vector": [("a", 1.0)]}, normalization="z")


def test_fuse_dispatches() -> None:
    legs = {"vector": [("a", 0.9)], "keyword": [("b", 3.0)]}
    assert [f.id for f in fuse(legs, "rrf", weights={"vector": 1.0, "keyword": 2.0})] == ["b", "a"]
    assert [f.id for f in fuse(legs, "convex", weights={"vector": 0.9, "keyword": 0.1})] == ["a", "b"]
    assert fuse(legs, "rrf")[0].rrf == fuse(legs, "rrf")[0].score
    with pytest.raises(ValueError):
        fuse(legs, "borda")
