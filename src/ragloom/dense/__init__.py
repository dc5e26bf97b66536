"""Dense retrieval: vectors live in segments (`ragloom.segments`); see `Part.dense`."""
