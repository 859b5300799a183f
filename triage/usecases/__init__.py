"""What a user does, as plain functions over a knowledge base's URL (or a session)
and what the command was given: no typer, no Starlette, no printing.

The CLI parses, calls one of these and prints; the server routes, calls the
same one and responds.  Above the knowledge base, the engine, the renderer and
the GitHub client; below ``cli`` and ``serve``.

- :mod:`triage.usecases.record`: runs recorded by hand, from a log, results files or GitHub;
- :mod:`triage.usecases.imports`: a file of run records imported, an investigation's runs exported;
- :mod:`triage.usecases.report`: an investigation's view, as the report shows it;
- :mod:`triage.usecases.lookup`: its runs, bisects, hypotheses seen elsewhere, history and replay;
- :mod:`triage.usecases.scan`: a log read against the known failures, signatures drafted from it;
- :mod:`triage.usecases.post`: the sticky comment, evaluated, fitted and posted;
- :mod:`triage.usecases.runs`: a run excluded (it decides nothing), included again or deleted;
- :mod:`triage.usecases.byhand`: a bisect point marked, manual evidence recorded;
- :mod:`triage.usecases.rulefiles`: rule files checked;
- :mod:`triage.usecases.schema`: the knowledge base's schema version, and its upgrade.
"""
