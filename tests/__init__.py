"""s2r's tests, laid out like the code: ``tests/<package>/test_<module>.py`` tests
``s2r/<package>/<module>.py`` (``tests/ui/`` the dashboard, ``tests/cli/`` whole commands,
``tests/architecture/`` the import rules). Shared helpers live in :mod:`tests.helpers`,
shared fixtures in the ``conftest.py`` files, the architecture checker in ``tests/tools/``.
"""
