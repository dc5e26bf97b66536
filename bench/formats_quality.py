"""Extraction quality of ragloom's converters against ground truth, beside the alternatives.

PDF: the pdf-text collection (12 PDFs, 154 pages; ground truth from docling's test set and py-pdf's
benchmark, docs/formats.md); HTML: the article-extraction benchmark (181 pages with their
article bodies). Each extractor's text is scored against the truth with the benchmark's own
metric: F1 of word 4-gram shingles, each document weighing the same (precision and recall
averaged over documents, F1 of the two averages).

    python bench/formats_quality.py [--data ../shared/data] [--only pdf|html]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import logging
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragloom.convert import convert_bytes  # noqa: E402

console = Console(width=140)
_TOKEN = re.compile(r"\w+")
_MARKUP = re.compile(r"<!--.*?-->|^#+\s*|^\s*[-*]\s+|\*\*|\||^-{3,}$", re.M)


def shingles(text: str, n: int = 4) -> Counter:
    tokens = _TOKEN.findall(text.lower())
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)))


def scores(truth: str, found: str) -> tuple[float, float]:
    """(precision, recall) of `found`'s shingles against `truth`'s."""
    want, got = shingles(truth), shingles(found)
    common = sum((want & got).values())
    precision = common / sum(got.values()) if got else (1.0 if not want else 0.0)
    recall = common / sum(want.values()) if want else 1.0
    return precision, recall


def f1(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    precision = statistics.mean(p for p, _ in pairs)
    recall = statistics.mean(r for _, r in pairs)
    return 2 * precision * recall / (precision + recall), precision, recall


# -- PDF extractors -------------------------------------------------------------------------
def ragloom_pdf(data: bytes) -> str:
    return convert_bytes("pdf", data, "x.pdf").text


def pypdfium2_plain(data: bytes) -> str:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    return "\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))


def pypdf_text(data: bytes) -> str:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on damaged xrefs

    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)


def markitdown_pdf(data: bytes) -> str:
    from markitdown import MarkItDown, StreamInfo

    return (
        MarkItDown()
        .convert_stream(io.BytesIO(data), stream_info=StreamInfo(extension=".pdf"))
        .markdown
    )


# -- HTML extractors ------------------------------------------------------------------------
def ragloom_html(data: bytes) -> str:
    return convert_bytes("html", data, "x.html").text


def readability_lxml(data: bytes) -> str:
    import lxml.html
    from readability import Document

    summary = Document(data.decode("utf-8", "replace")).summary(html_partial=True)
    return lxml.html.fromstring(summary).text_content() if summary.strip() else ""


def trafilatura_plain(data: bytes) -> str:
    import trafilatura

    return trafilatura.extract(data.decode("utf-8", "replace")) or ""


def markitdown_html(data: bytes) -> str:
    from markitdown import MarkItDown, StreamInfo

    info = StreamInfo(extension=".html", charset="utf-8")
    return MarkItDown().convert_stream(io.BytesIO(data), stream_info=info).markdown


PDF_EXTRACTORS = {
    "ragloom (pypdfium2)": ragloom_pdf,
    "pypdfium2, plain text": pypdfium2_plain,
    "pypdf": pypdf_text,
    "markitdown (pdfminer.six)": markitdown_pdf,
}
HTML_EXTRACTORS = {
    "ragloom (trafilatura)": ragloom_html,
    "trafilatura, plain text": trafilatura_plain,
    "readability-lxml": readability_lxml,
    "markitdown (whole page)": markitdown_html,
}


def pdf_cases(data: Path) -> list[tuple[str, bytes, str]]:
    root = data / "pdf-text"
    cases = []
    for pdf in sorted((root / "pdf").glob("*.pdf")):
        truth = next((root / "truth").glob(pdf.stem + ".*"))
        cases.append((pdf.stem, pdf.read_bytes(), _MARKUP.sub(" ", truth.read_text("utf-8"))))
    return cases


def html_cases(data: Path) -> list[tuple[str, bytes, str]]:
    root = data / "article-extraction"
    truth = json.loads((root / "ground-truth.json").read_text("utf-8"))
    return [
        (key, gzip.decompress((root / "html" / f"{key}.html.gz").read_bytes()), item["articleBody"])
        for key, item in sorted(truth.items())
    ]


def measure(title: str, cases, extractors: dict[str, Callable[[bytes], str]]) -> None:
    table = Table(title=title)
    for column in ("extractor", "F1", "precision", "recall", "failed", "seconds"):
        table.add_column(column, justify="left" if column == "extractor" else "right")
    results = {}
    for name, extract in extractors.items():
        pairs, failed = [], 0
        started = time.perf_counter()
        for _, data, truth in cases:
            try:
                found = extract(data)
            except Exception:
                found, failed = "", failed + 1
            pairs.append(scores(truth, found))
        seconds = time.perf_counter() - started
        results[name] = f1(pairs)
        score, precision, recall = results[name]
        table.add_row(
            name, f"{score:.3f}", f"{precision:.3f}", f"{recall:.3f}", str(failed), f"{seconds:.1f}"
        )
    console.print(table)
    best_other = max((v[0], k) for k, v in results.items() if not k.startswith("ragloom"))
    ours = results[next(k for k in results if k.startswith("ragloom"))][0]
    console.print(
        f"ragloom {ours:.3f} vs best alternative {best_other[1]} {best_other[0]:.3f}:"
        f" ratio {ours / best_other[0]:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--only", choices=("pdf", "html"))
    args = parser.parse_args()
    suites = {
        "pdf": (pdf_cases, "pdf-text", PDF_EXTRACTORS),
        "html": (html_cases, "article-extraction", HTML_EXTRACTORS),
    }
    for name, (cases_of, folder, extractors) in suites.items():
        if args.only in (None, name):
            cases = cases_of(args.data)
            title = f"{name.upper()}: {len(cases)} documents, {args.data / folder}"
            measure(title, cases, extractors)


if __name__ == "__main__":
    main()
