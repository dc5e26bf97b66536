"""Swap a path between inside and outside content as fast as one process can (race tests).

`python tests/flipper.py file TARGET SECRET`: TARGET flips between a regular file and a
symbolic link to SECRET. `python tests/flipper.py folder DIR OUTSIDE_DIR`: the folder DIR
flips between a real folder and a link to OUTSIDE_DIR. Runs until killed; each swap is one
atomic rename, so TARGET always exists.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def flip_file(target: Path, secret: Path) -> None:
    regular, link = target.with_name(".regular"), target.with_name(".link")
    regular.write_text("inside words only\n")
    link.symlink_to(secret)
    while True:
        os.replace(regular, target)
        regular.write_text("inside words only\n")
        os.replace(link, target)
        link.symlink_to(secret)


def flip_folder(folder: Path, outside: Path) -> None:
    link, held = folder.with_name(".dlink"), folder.with_name(".held")
    link.symlink_to(outside, target_is_directory=True)
    while True:
        os.rename(folder, held)
        os.replace(link, folder)  # a link replaces the (now absent) folder name
        os.rename(folder, link)
        os.rename(held, folder)


if __name__ == "__main__":
    mode, first, second = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    (flip_file if mode == "file" else flip_folder)(first, second)
