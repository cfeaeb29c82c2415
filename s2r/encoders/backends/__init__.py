"""The encoder backends, one module each, registered here one line each (in this order:
messages list them so).

Adding a backend: write ``s2r/encoders/backends/NAME.py`` with a
:class:`~s2r.encoders.backend.Backend` subclass (``BACKEND = ...``; see
:mod:`s2r.encoders.backends.base` for the shared weights-file and weightless behaviour), and
register it below. Registry entries then name it by ``BuildSpec(backend="NAME")``.
"""

from s2r.encoders.backend import register_backend
from s2r.encoders.backends import checkpoint, open_clip, packaged, pixels, simcnn, state, timm

register_backend(timm.BACKEND)
register_backend(open_clip.BACKEND)
register_backend(checkpoint.BACKEND)
register_backend(pixels.BACKEND)
register_backend(packaged.BACKEND)
register_backend(state.BACKEND)
register_backend(simcnn.BACKEND)
