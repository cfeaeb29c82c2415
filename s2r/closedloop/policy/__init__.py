"""Behaviour-cloning policies on embeddings (see :mod:`s2r.closedloop`)."""
