"""``triage serve``: the GitHub App webhook server and the dashboard.

One concern per module: ``webhook`` (signatures, what an event names),
``queue`` (the durable delivery queue in the knowledge base), ``auth``
(GitHub App JWT -> installation token, or a plain token), ``worker`` (a
delivery -> runs recorded, evaluated, posted), ``dashboard`` (HTML pages)
and ``app`` (the ASGI routes and the worker pool).  Starlette and uvicorn
are imported only here.
"""
