"""The ``triage`` command (and ``python -m triage``).

A command is a short process that makes many objects and frees almost none
in cycles: the cyclic garbage collector only walks them, again and again as
they grow (a third of a whole evaluation of 100,000 runs, and some of the
start-up). It is off for the process, from before the first import; what a
command frees, reference counting frees. ``triage serve``, which stays up,
turns it back on.

At the end, the knowledge base's connections are closed, then every object
is frozen: the interpreter's collection on its way out would otherwise walk
them all once more (0.15 s after a command on 100,000 runs), to free memory
the process is about to give back whole.

Pydantic (which SQLModel and typer build on) looks for plugins of its own among
every installed distribution's entry points when its first model is defined:
10-15 ms of every command, for plugins triage never uses.  A command turns that
off unless ``PYDANTIC_DISABLE_PLUGINS`` says otherwise
(:func:`triage.settings.without_pydantic_plugins`)."""

import gc
import sys


def run() -> None:
    gc.disable()
    from triage.settings import without_pydantic_plugins

    without_pydantic_plugins()
    try:
        from triage.cli import main

        main()
    finally:
        db = sys.modules.get("triage.kb.db")
        if db is not None:
            try:
                db.dispose_engines()
            except Exception:  # closing: what was committed is kept either way
                pass
        gc.freeze()


if __name__ == "__main__":
    run()
