"""User-facing errors.

Every problem a user can cause (a missing file, a wrong key, a bad checkpoint) raises an
:class:`S2RError` subclass whose message names the file or field, what was expected and what
arrived. The CLI prints the message and exits with status 2 (a traceback only with
``--debug``); the app shows it with ``st.error``.
"""

from __future__ import annotations


class S2RError(Exception):
    """Base class of every error whose message is meant for the user."""


class DataError(S2RError, ValueError):
    """A dataset (file, folder, key, array) is missing or not what was expected."""


class EncoderError(S2RError):
    """An encoder id, checkpoint or weights file is unknown, missing or invalid."""


class MetricError(S2RError, ValueError):
    """Inputs to a metric cannot give a meaningful score (and no documented fallback applies)."""


class DegenerateEmbeddingsError(EncoderError, MetricError):
    """Embeddings nothing can be computed from: NaN or inf, or the same for every frame.

    Both an encoder fault (what it returned is unusable) and a metric input fault (no score
    or map of it means anything), so it is both kinds: every caller that handles either
    handles it.
    """
