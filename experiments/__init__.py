"""Experiment binaries: one folder per paper, plus ``reproduce`` (the main job).

Importing this package has no side effect. Every binary's ``main.py`` calls
``jaxpapers.core.app.run``, which initialises the distributed runtime inside
``main`` when asked (``--distributed``, ``$JAXPAPERS_DISTRIBUTED``, or a
detected multi-process job), so the same command runs on each host of a
multi-host job.
"""
