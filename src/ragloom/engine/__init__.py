"""The engine behind `ragloom.Index`: the write path (`ingest`, `documents`), the read path
(`searching`: `legs` -> fusion and controls in `ragloom.retrieval` -> `hydrate`), the
embedding models of collections (`embedders`) and the services of the search steps
(`services`); storage sits behind `ragloom.store`."""
