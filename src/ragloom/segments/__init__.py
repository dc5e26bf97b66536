"""Immutable segments: postings, lengths, vectors and metadata columns of a run of chunks.

A collection's searchable state is a list of segments (some in memory, some in files) plus
per-view deletion masks. Segments never change once built; writes add new small segments and
merges replace several segments by one, so a search always reads one consistent version.

Their whole lifecycle lives here: building (`build`), the view of one version (`view`),
merging in memory (`merge_memory`) and into a file (`merge_file`), the tiered merge policy
(`policy`) and what maintenance does next (`schedule`), files (`files`, `persist`). The legs
that score them are `ragloom.lexical` and `ragloom.dense`.
"""
