"""Sentence embeddings: the model spec, the persistent vector cache and the plain cached encoder."""
