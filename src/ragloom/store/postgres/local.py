"""`python -m ragloom.store.postgres.local [start] FOLDER [--shards N] [--standbys K]`: the
name issue 26 gave the local launcher, kept working; the launcher is `ragloom.local_postgres`
(it starts servers, so it sits below the stores rather than inside one)."""

from ragloom.local_postgres.command import main

if __name__ == "__main__":
    main()
