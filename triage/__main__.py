"""The ``triage`` command (and ``python -m triage``).

A command is a short process that makes many objects and frees almost none
in cycles: the cyclic garbage collector only walks them, again and again as
they grow (a third of a whole evaluation of 100,000 runs, and some of the
start-up). It is off for the process, from before the first import; what a
command frees, reference counting frees. ``triage serve``, which stays up,
turns it back on."""

import gc


def run() -> None:
    gc.disable()
    from triage.cli import main

    main()


if __name__ == "__main__":
    run()
