"""Convert the classic Glasgow test collections (CISI, Medline, CACM, NPL) into BEIR folders.

Usage: python bench/convert_classic.py --raw DIR --out ../data-extra [--only cisi medline ...]
           [--note NAME=where its raw files came from]

DIR holds one folder a collection with the files as the Glasgow IR group distributes them
(or the Glasgow tarball itself, `cisi.tar.gz` / `med.tar.gz`, which is unpacked and checked):
  cisi/  CISI.ALL CISI.QRY CISI.REL          (1,460 docs, 112 queries, 76 judged)
  med/   MED.ALL MED.QRY MED.REL             (1,033 docs, 30 queries; written as medline/)
  cacm/  cacm.all query.text qrels.text      (3,204 docs, 64 queries, 52 judged)
  npl/   doc-text.trec query-text.trec qrels (11,429 docs, 93 queries; Terrier's TREC-format
         copy of the Glasgow NPL files, as shipped in terrier-core's share/vaswani_npl)
Each output folder gets corpus.jsonl, queries.jsonl, qrels/test.tsv (every judged pair,
relevance 1) and SOURCE.md (where the files came from, their md5, and the conversion). The
data stays outside the repository; see docs/hybrid.md for what the collections are used for.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

# md5 of the Glasgow tarballs as we obtained them (ir_datasets records the same digest for
# cran.tar.gz, 1730f7be572d95a5a4b56c59a7b900a5, fetched from the same place).
TARBALL_MD5 = {
    "cisi.tar.gz": "87a36dd881ccb91aa46de09de11525c0",
    "med.tar.gz": "05dec9173d5c695fbf125b5565569f1f",
}
EXPECTED = {  # (documents, queries with at least one judgment)
    "cisi": (1460, 76),
    "medline": (1033, 30),
    "cacm": (3204, 52),
    "npl": (11429, 93),
}
RAW_NAMES = {"medline": "med"}  # the Glasgow folder / tarball name where it differs
FIELD = re.compile(r"^\.([A-Z])(?:\s+(\S+))?\s*$")


def read_text(path: Path) -> str:
    """A raw file's text, line endings made Unix (some copies of CACM carry CRLF)."""
    return path.read_bytes().decode("latin-1").replace("\r\n", "\n")


def smart_records(text: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(id, {field letter: text}) for each `.I id` record of a SMART-format file."""
    current: str | None = None
    fields: dict[str, list[str]] = {}
    field = None
    for line in text.split("\n"):
        m = FIELD.match(line)
        if m and m.group(1) == "I":
            if current is not None:
                yield current, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}
            current, fields, field = str(int(m.group(2))), {}, None
        elif m and m.group(2) is None:
            field = m.group(1)
            fields.setdefault(field, [])
        elif field is not None:
            fields[field].append(line)
        elif current is not None and line.strip().isdigit():
            # an id broken over two lines (our copy of cacm.all has ".I 28" / "56" for
            # 2856: one byte more than the Glasgow README's size, and this is that byte)
            current = str(int(current + line.strip()))
    if current is not None:
        yield current, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}


def pairs(text: str, query_col: int, doc_col: int) -> list[tuple[str, str]]:
    """Judged (query id, doc id) pairs from a whitespace-separated relevance file."""
    out = []
    for line in text.split("\n"):
        cols = line.split()
        if len(cols) > max(query_col, doc_col):
            out.append((str(int(cols[query_col])), str(int(cols[doc_col]))))
    return out


def trec_docs(text: str) -> Iterator[tuple[str, str]]:
    for m in re.finditer(r"<DOC>\s*<DOCNO>\s*(\S+?)\s*</DOCNO>(.*?)</DOC>", text, re.S):
        yield m.group(1), " ".join(m.group(2).split())


def trec_topics(text: str) -> Iterator[tuple[str, str]]:
    for m in re.finditer(r"<num>\s*(\S+?)\s*</num>\s*<title>(.*?)</title>", text, re.S):
        yield m.group(1), " ".join(m.group(2).split()).lower()


def collection(name: str, folder: Path) -> tuple[list[dict], dict[str, str], list]:
    """(corpus records, queries, judged pairs) of one collection's raw files."""
    if name == "npl":
        docs = [
            {"_id": i, "title": "", "text": t}
            for i, t in trec_docs(read_text(folder / "doc-text.trec"))
        ]
        queries = dict(trec_topics(read_text(folder / "query-text.trec")))
        return docs, queries, pairs(read_text(folder / "qrels"), 0, 2)
    files = {
        "cisi": ("CISI.ALL", "CISI.QRY", "CISI.REL", 0, 1),
        "medline": ("MED.ALL", "MED.QRY", "MED.REL", 0, 2),
        "cacm": ("cacm.all", "query.text", "qrels.text", 0, 1),
    }[name]
    docs = [
        {"_id": i, "title": f.get("T", ""), "text": f.get("W", "")}
        for i, f in smart_records(read_text(folder / files[0]))
    ]
    queries = {
        i: " ".join(p for p in (f.get("T", ""), f.get("W", "")) if p)
        for i, f in smart_records(read_text(folder / files[1]))
    }
    return docs, queries, pairs(read_text(folder / files[2]), files[3], files[4])


def unpack(raw: Path, name: str) -> tuple[Path, str]:
    """The folder holding a collection's files (unpacking and checking its tarball if that
    is what we were given), and a line for SOURCE.md on what was read."""
    stem = RAW_NAMES.get(name, name)
    folder = raw / stem
    tarball = raw / f"{stem}.tar.gz"
    if tarball.is_file():
        digest = hashlib.md5(tarball.read_bytes()).hexdigest()
        want = TARBALL_MD5.get(tarball.name)
        if want and digest != want:
            raise SystemExit(f"{tarball}: md5 {digest}, expected {want}")
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as tar:
            tar.extractall(folder, filter="data")
        return folder, f"`{tarball.name}` (md5 {digest}), unpacked"
    if not folder.is_dir():
        raise SystemExit(f"neither {folder}/ nor {tarball} exists")
    digests = ", ".join(
        f"`{p.name}` md5 {hashlib.md5(p.read_bytes()).hexdigest()}"
        for p in sorted(folder.iterdir())
        if p.is_file()
    )
    return folder, digests


def write(name: str, raw: Path, out: Path, source_note: str) -> None:
    folder, read = unpack(raw, name)
    docs, queries, judged = collection(name, folder)
    doc_ids = {d["_id"] for d in docs}
    judged = sorted(
        {(q, d) for q, d in judged if q in queries and d in doc_ids},
        key=lambda p: (int(p[0]), int(p[1])),
    )
    judged_queries = {q for q, _ in judged}
    want_docs, want_queries = EXPECTED[name]
    if (len(docs), len(judged_queries)) != (want_docs, want_queries):
        raise SystemExit(
            f"{name}: {len(docs)} docs and {len(judged_queries)} judged queries, "
            f"expected {want_docs} and {want_queries}"
        )
    target = out / name
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with open(target / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(target / "queries.jsonl", "w", encoding="utf-8") as f:
        for q, text in queries.items():
            if q in judged_queries:
                f.write(json.dumps({"_id": q, "text": text}, ensure_ascii=False) + "\n")
    with open(target / "qrels" / "test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"{q}\t{d}\t1\n" for q, d in judged)
    empty = sum(1 for d in docs if not d["text"])
    (target / "SOURCE.md").write_text(
        f"# {name}\n\n{source_note}\n\nRead: {read}.\n\n"
        f"Converted by `bench/convert_classic.py` (ragloom): {len(docs)} documents "
        f"({empty} with no abstract, title only), {len(judged_queries)} queries that have "
        f"judgments (of {len(queries)}), {len(judged)} judged pairs, all relevance 1. Ids are "
        "the collection's own numbers without leading zeros; whitespace collapsed; "
        "title = .T, text = .W (SMART files), queries = .T + .W; NPL queries lower-cased.\n",
        encoding="utf-8",
    )
    print(f"{name}: {len(docs)} docs, {len(judged_queries)} queries, {len(judged)} qrels")


SOURCES = {
    "cisi": "CISI (Institute for Scientific Information; library science), from the Glasgow IR "
    "group's test collections page (`cisi.tar.gz`).",
    "medline": "Medline (MED; 1,033 biomedical abstracts, 30 queries), from the Glasgow IR group's "
    "test collections page (`med.tar.gz`, MED.REL of 2000; MED.REL.OLD not used).",
    "cacm": "CACM (Communications of the ACM titles and abstracts, 1958-1979), the Glasgow IR "
    "group's `cacm` files (cacm.all, query.text, qrels.text; CRLF line ends removed).",
    "npl": "NPL (Vaswani; 11,429 electronics abstracts, 93 queries), the Glasgow IR group's NPL "
    "files in the TREC format Terrier ships (terrier-core `share/vaswani_npl`).",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=list(EXPECTED))
    parser.add_argument(
        "--note", action="append", default=[], help="name=where the raw files came from"
    )
    args = parser.parse_args()
    notes = dict(n.split("=", 1) for n in args.note)
    for name in args.only:
        write(
            name,
            args.raw,
            args.out,
            SOURCES[name] + (f" Obtained from: {notes[name]}." if name in notes else ""),
        )


if __name__ == "__main__":
    main()
