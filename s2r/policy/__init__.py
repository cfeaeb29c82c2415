"""Policies fitted on embeddings: behaviour cloning (:mod:`.bc`)."""
