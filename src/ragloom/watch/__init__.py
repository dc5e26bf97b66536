"""Keep an index equal to its folders: OS events coalesced into batches, a sweep that catches
what events missed, lexical first and vectors after, one writer per index (`Watcher`)."""

from ragloom.watch.watcher import Watcher

__all__ = ["Watcher"]
