"""The engine behind `ragloom.Index`: the write path (`ingest`), the read path (`searching`),
and the embedding models of collections (`models`); storage sits behind `ragloom.store`."""
