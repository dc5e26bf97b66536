"""Dense retrieval over segments (`ragloom.segments`): exact cosine top k as one matrix
product, or through a segment's HNSW graph (`graph`) when it has one (`views`)."""
