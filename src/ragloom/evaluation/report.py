"""`ragloom eval --report report.html`: one self-contained page (no external file or script)
with the metrics table and plots drawn by matplotlib, embedded as PNG data URIs.

Plots: per-query nDCG@10 distribution per setting; lexical against dense nDCG@10 per query;
nDCG@10 of each fusion method across the dense leg's weight (when hybrid was swept).
"""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragloom.errors import MissingExtra
from ragloom.evaluation.suite import METRICS, Scored, SuiteResult

INSTALL_HINT = "install the report extra: pip install 'ragloom[report]'"
COLORS = {"lexical": "#b7791f", "dense": "#6b46c1", "hybrid": "#2f855a"}


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingExtra(f"matplotlib is not installed ({exc})", INSTALL_HINT) from None
    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _color(scored: Scored) -> str:
    return COLORS.get(scored.setting.options.mode or "hybrid", "#3182ce")


def distribution_plot(plt: Any, scored: Sequence[Scored]) -> str:
    """Per-query nDCG@10 of each setting: a violin of where the queries' scores lie, with
    the share of queries scoring 0 and 1 and the mean marked."""
    figure, axes = plt.subplots(figsize=(9, 0.75 * len(scored) + 1.4))
    data = [[q["ndcg@10"] for q in s.queries.values()] for s in scored]
    positions = list(range(1, len(scored) + 1))
    parts = axes.violinplot(
        data, positions, orientation="horizontal", widths=0.85, showextrema=False
    )
    for body, item in zip(parts["bodies"], scored):
        body.set_facecolor(_color(item))
        body.set_edgecolor("black")
        body.set_alpha(0.55)
    for y, values in zip(positions, data):
        mean = sum(values) / len(values)
        axes.plot([mean], [y], marker="D", color="white", markeredgecolor="black")
        zeros = sum(v == 0 for v in values) / len(values)
        ones = sum(v == 1 for v in values) / len(values)
        axes.text(-0.035, y, f"{zeros:.0%}", ha="right", va="center", fontsize=8)
        axes.text(1.035, y, f"{ones:.0%}", ha="left", va="center", fontsize=8)
    axes.set_yticks(positions, [s.setting.name for s in scored])
    axes.invert_yaxis()
    axes.set_xlabel("nDCG@10 per query (diamond: mean; left: share at 0, right: share at 1)")
    axes.set_xlim(-0.12, 1.12)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    try:
        return _png(figure)
    finally:
        plt.close(figure)


def scatter_plot(plt: Any, lexical: Scored, dense: Scored) -> str:
    """Each query's lexical nDCG@10 against its dense nDCG@10."""
    shared = sorted(set(lexical.queries) & set(dense.queries))
    x = [lexical.queries[q]["ndcg@10"] for q in shared]
    y = [dense.queries[q]["ndcg@10"] for q in shared]
    better_dense = sum(b > a for a, b in zip(x, y))
    better_lexical = sum(a > b for a, b in zip(x, y))
    counts = Counter(zip(x, y))  # many queries share a point (one relevant document each)
    points = list(counts)
    figure, axes = plt.subplots(figsize=(5.6, 5.4))
    axes.scatter(
        [p[0] for p in points],
        [p[1] for p in points],
        s=[12 + 6 * counts[p] for p in points],
        alpha=0.5,
        color="#3182ce",
        edgecolors="none",
    )
    axes.plot([0, 1], [0, 1], color="#718096", linewidth=1, linestyle="--")
    axes.set_xlim(-0.03, 1.03)
    axes.set_ylim(-0.03, 1.03)
    axes.set_xlabel("lexical nDCG@10")
    axes.set_ylabel("dense nDCG@10")
    axes.set_title(
        f"{len(shared)} queries (marker area: how many): dense better on {better_dense}, "
        f"lexical on {better_lexical}",
        fontsize=10,
    )
    axes.grid(alpha=0.3)
    figure.tight_layout()
    try:
        return _png(figure)
    finally:
        plt.close(figure)


def sweep_plot(plt: Any, result: SuiteResult) -> str:
    """nDCG@10 of each fusion method across the dense weight, with the legs alone for scale."""
    figure, axes = plt.subplots(figsize=(8, 4.6))
    methods = list(dict.fromkeys(p.method for p in result.sweep))
    for method in methods:
        points = [p for p in result.sweep if p.method == method]
        axes.plot(
            [p.dense_weight for p in points],
            [p.ndcg for p in points],
            marker="o",
            markersize=4,
            label=method,
        )
    for scored in result.scored:
        if scored.setting.name in ("lexical", "dense"):
            axes.axhline(
                scored.metrics["ndcg@10"],
                color=COLORS[scored.setting.name],
                linestyle=":",
                label=f"{scored.setting.name} alone",
            )
    axes.set_xlabel("dense weight (lexical weight = 1 - dense weight)")
    axes.set_ylabel("nDCG@10")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower center")
    figure.tight_layout()
    try:
        return _png(figure)
    finally:
        plt.close(figure)


def _table(result: SuiteResult) -> str:
    best = {m: max(s.metrics.get(m, 0.0) for s in result.scored) for m in METRICS}
    head = "".join(f"<th>{name}</th>" for name in ("setting", *METRICS, "search ms/query"))
    rows = []
    for s in result.scored:
        cells = [html.escape(s.setting.name) + (" <em>(default)</em>" if s.setting.default else "")]
        for metric in METRICS:
            value = s.metrics.get(metric)
            text = "-" if value is None else f"{value:.4f}"
            cells.append(f"<strong>{text}</strong>" if value == best[metric] else text)
        cells.append("-" if s.ms_per_query is None else f"{s.ms_per_query:.2f}")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 980px; color: #1d2430; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
.meta { color: #5d6778; }
table { border-collapse: collapse; margin-top: 8px; }
th, td { padding: 5px 12px; border-bottom: 1px solid #d9dee7; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { margin: 12px 0; } img { max-width: 100%; }
figcaption { color: #5d6778; font-size: 13px; }
"""


def render_report(result: SuiteResult) -> str:
    """The report page as one HTML string."""
    plt = _pyplot()
    by_name = {s.setting.name: s for s in result.scored}
    figures = [
        (
            "nDCG@10 per query, per setting",
            distribution_plot(plt, result.scored),
            "How each setting's per-query scores spread; the mean is the table's figure.",
        )
    ]
    if "lexical" in by_name and "dense" in by_name:
        figures.append(
            (
                "Lexical against dense, query by query",
                scatter_plot(plt, by_name["lexical"], by_name["dense"]),
                "Points off the diagonal are queries one leg answers better: what fusion can win.",
            )
        )
    if result.sweep:
        figures.append(
            (
                "nDCG@10 by fusion method and weight",
                sweep_plot(plt, result),
                "Each fusion method across the dense leg's weight; dotted: each leg alone.",
            )
        )
    sections = "".join(
        f'<h2>{html.escape(title)}</h2><figure><img alt="{html.escape(title)}" src="{src}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        for title, src, caption in figures
    )
    built = "reused" if result.reused else f"built in {result.build_seconds:.1f} s"
    meta = (
        f"{result.split} split, {result.queries} judged queries, {result.documents} documents, "
        f"{result.chunks} chunks; embedding model {result.embedder or 'none'}; index {built}; "
        f"whole run {result.total_seconds:.1f} s. nDCG@10 and MRR@10 score a top-10 search, "
        "Recall@100 a top-100 search."
    )
    title = f"ragloom evaluation: {result.dataset}"
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{html.escape(title)}</h1><p class="meta">{html.escape(meta)}</p>'
        f"<h2>Metrics</h2>{_table(result)}{sections}</body></html>"
    )


def write_report(result: SuiteResult, path: str | Path) -> Path:
    """Write the report page to `path` and return it."""
    target = Path(path)
    target.write_text(render_report(result), encoding="utf-8")
    return target
