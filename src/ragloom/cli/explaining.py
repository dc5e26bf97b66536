"""How `ragloom search` prints what each stage did: legs, fusion weights, boosts, steps."""

from __future__ import annotations

from typing import Any

from ragloom.console import err, out


def weights_line(fusion: dict[str, Any]) -> str:
    """`lexical 0.47 x 0.53 + dense 0.53 x 0.62 (probes: lexical MRR 0.93, dense 0.93; ...)`."""
    weights, shares, why = fusion["weights"], fusion["shares"], fusion["why"]
    estimated = set(shares.get("estimated", ()))  # not in that leg's list: at most this
    parts = " + ".join(
        f"{leg} {weights[leg]:.2f} x {'<=' if leg in estimated else ''}{shares[leg]:.3f}"
        for leg in weights
    )
    if "probes" in why:
        probes = why["probes"]
        basis = f"probes: lexical MRR {probes['lexical_mrr']}, dense {probes['dense_mrr']}"
    else:
        basis = why["basis"]
    agreement = why.get("agreement")
    if agreement:
        basis += (
            f"; agreement: lexical {agreement['lexical_support']:.2f}, "
            f"dense {agreement['dense_support']:.2f}"
        )
    return f"{parts}  ({basis})"


def print_explain(explain: dict[str, Any]) -> None:
    legs = ", ".join(
        f"{leg} #{info['rank']} ({'cosine' if leg == 'dense' else 'bm25'} "
        f"{info.get('score', info.get('cosine')):.3f})"
        for leg, info in explain["legs"].items()
    )
    fusion = explain["fusion"]
    lines = [f"     legs: {legs or 'none'}  (match: {explain['match']})"]
    lines.append(f"     fusion: {fusion['method']}  -> {fusion['score']:.4f}")
    if "why" in fusion:  # adaptive: the weights this query used, and why
        lines.append(f"     weights: {weights_line(fusion)}")
    for boost in explain["boosts"]:
        lines.append(f"     boost: x{boost['factor']} ({boost['rule']})")
    for note in explain["diversity"]:
        lines.append(f"     diversity: {note}")
    if "variants" in explain:
        found = ", ".join(f"#{v['variant']} rank {v['rank']}" for v in explain["variants"])
        lines.append(f"     query variants: {found}")
    if "hop" in explain:
        lines.append(f"     found in hop {explain['hop']}")
    if "rerank" in explain:
        step = explain["rerank"]
        lines.append(
            f"     rerank: {step['model']} {step['score']:.4f} (was #{step['rank_before']})"
        )
    lines.append(f"     final score: {explain['final_score']:.4f}")
    for line in lines:
        out.print(line, markup=False, highlight=False)


def found_by(hit: Any) -> str:
    """`found by both (lexical #1, dense #3)`: which leg found a hit, at which rank."""
    ranks = [
        f"{leg} #{rank}"
        for leg, rank in (("lexical", hit.lexical_rank), ("dense", hit.dense_rank))
        if rank is not None
    ]
    pending = "; its vector is pending" if getattr(hit, "pending", False) else ""
    return f"found by {hit.match}" + (f" ({', '.join(ranks)})" if len(ranks) > 1 else "") + pending


def print_steps(hits: Any) -> None:
    """What expansion, rerank and multi-hop did (stderr)."""
    lines = []
    if hits.variants and len(hits.variants) > 1:
        lines.append("searched: " + " | ".join(hits.variants))
    rerank = hits.steps.get("rerank")
    if rerank and not rerank["degraded"]:
        lines.append(f"reranked {rerank['candidates']} candidate(s) with {rerank['model']}")
    for hop in hits.trace or ():
        lines.append(f"hop {hop['hop']}: {hop['query']!r} -> {len(hop['new_chunk_ids'])} new")
    if hits.trace:
        lines.append(f"multi-hop stopped: {hits.steps['hops']['stopped']}")
    if hits.total_tokens is not None:
        lines.append(f"{hits.total_tokens} tokens in {len(hits)} hit(s)")
    for line in lines:
        err.print(line, highlight=False, markup=False)
