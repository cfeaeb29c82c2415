"""s2r: which pretrained vision encoder carries a sim-trained policy to the real robot?

The library behind the dashboard (``streamlit run app.py``) and the CLI (``python -m s2r``).
It never imports Streamlit.

Data flow::

    dataset source -> FrameSet -> Encoder -> embeddings (cached) -> metrics -> scores table
                                         \\-> t-SNE projection, saliency maps
"""

__version__ = "0.1.0"

from s2r.errors import S2RError
from s2r.frameset import FrameSet
