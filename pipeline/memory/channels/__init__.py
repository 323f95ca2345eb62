"""Pure retrieval channels of the ``hybrid`` memory (seed 003: semantic, BM25, graph, temporal).

Why a package of small pure modules: each channel is tested on hand-checked values in isolation,
and the hybrid system (pipeline.memory.hybrid) only wires them together, so an ablation is one
config switch and a channel bug shows up in that channel's own table-driven tests.

- ``fusion``   reciprocal rank fusion (RRF, k = 60) and score -> ranking conversion
- ``lexical``  BM25 over bm25s (k1 1.2, b 0.75, English stop words, Snowball stemmer)
- ``semantic`` cosine similarity on L2-normalized embeddings
- ``entities`` the offline entity extractor feeding the graph's entity edges
- ``graph``    the memory graph (entity, temporal, kNN edges) and spreading activation
- ``temporal`` time-expression parser (question date relative) and recency-decay scores
"""
