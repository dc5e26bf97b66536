"""What a walk does with each kind of file it meets, decided by name before anything is read.

Text, Markdown, JSONL, CSV/TSV, source code and the converted formats are read; media and
other well-known binary kinds (images, audio, video, fonts, archives, compiled code,
databases such as an index file) are left out by the default rules and counted; anything
else is read and, if it is neither text nor a converted format, named as not supported.
"""

from __future__ import annotations

from ragloom.chunking.code import CODE_SUFFIXES
from ragloom.convert import CONVERTED_SUFFIXES

_LEFT_OUT: dict[str, tuple[str, ...]] = {
    "image": (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".ico",
              ".heic", ".heif", ".avif", ".psd", ".raw", ".cr2", ".nef", ".dng", ".xcf"),
    "audio": (".mp3", ".wav", ".flac", ".ogg", ".oga", ".m4a", ".aac", ".opus", ".wma",
              ".aiff", ".mid", ".midi"),
    "video": (".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".wmv", ".flv", ".mpg",
              ".mpeg", ".3gp"),
    "font": (".ttf", ".otf", ".woff", ".woff2", ".eot", ".pfb"),
    "archive": (".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".lz4",
                ".jar", ".war", ".whl", ".egg", ".deb", ".rpm", ".dmg", ".iso", ".apk"),
    "compiled code": (".pyc", ".pyo", ".o", ".a", ".so", ".dylib", ".dll", ".exe", ".class",
                      ".wasm", ".bin", ".obj", ".lib", ".node"),
    "database": (".db", ".db-wal", ".db-shm", ".sqlite", ".sqlite3", ".seg", ".mdb",
                 ".parquet", ".arrow", ".feather", ".npy", ".npz", ".pkl", ".pickle",
                 ".h5", ".hdf5", ".onnx", ".pt", ".safetensors"),
}  # fmt: skip
_KIND_OF = {suffix: kind for kind, suffixes in _LEFT_OUT.items() for suffix in suffixes}
TABULAR_SUFFIXES = (".csv", ".tsv")
# What is read as text, records or a converted document (a file of another name is read too:
# as text when it is text, else it is named as not supported).
SUPPORTED_SUFFIXES = (
    ".txt", ".md", ".markdown", ".jsonl", *TABULAR_SUFFIXES, *CONVERTED_SUFFIXES, *CODE_SUFFIXES
)  # fmt: skip


def left_out_kind(name: str) -> str | None:
    """The default rule that leaves a file out by its name ("image", "audio", ...), or None."""
    dot = name.rfind(".")
    return _KIND_OF.get(name[dot:].lower()) if dot > 0 else None
