"""Operations on a whole index, over the public store interface: backup and restore,
export and import as JSONL, salvage of a damaged file. The library verbs behind
`ragloom backup`, `restore`, `export`, `import` and `check --repair`."""

from ragloom.operations.backup import backup, restore
from ragloom.operations.manifest import Manifest

__all__ = ["Manifest", "backup", "restore"]
