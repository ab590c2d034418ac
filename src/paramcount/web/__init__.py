"""``paramcount serve``: a local web page and a JSON API over the library's public calls.

Needs the ``web`` extra (fastapi, uvicorn); nothing here is imported by ``import paramcount``.
The page's scripts, styles and fonts are vendored under ``static/`` and served by this app only.
"""
