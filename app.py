"""s2r dashboard: the router. Run with ``streamlit run app.py`` (``make run``).

Every run sets the app up once (:func:`ui.guards.app_setup`: page config, the session's
named state, the user's encoder config, the page URL read on a session's first run), then
runs the page the user opened. The pages are scripts in ``app_pages/``, listed once in
:mod:`ui.pages`: Home (pick the dataset and encoders, compute), Scores, Projection, Saliency,
Compare, Layers and Validation. Every number comes from the ``s2r`` library; the pages only
lay out widgets (see ``ui/`` for the glue).
"""

from __future__ import annotations

from ui import guards, pages

page = pages.navigation()
guards.app_setup()
page.run()
