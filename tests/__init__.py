"""s2r's tests, laid out like the code: ``tests/<package>/test_<module>.py`` tests
``s2r/<package>/<module>.py`` (``tests/pairing/`` and ``tests/projection/`` the top-level
modules of those names, ``tests/ui/`` the dashboard, ``tests/cli/`` whole commands and the
hostile-input catalogue, ``tests/architecture/`` the import rules). Shared helpers live in
:mod:`tests.helpers`, shared fixtures in the ``conftest.py`` files, the architecture checker in
``tests/tools/``.
"""
