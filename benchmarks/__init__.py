"""Side-by-side performance benchmarks: ``python -m benchmarks.<name>
[--quick]``.

Every module measures a method against the reference or the obvious alternative
in one process and writes ``benchmarks/results/<name>.json``
(:mod:`jaxpapers.core.benchmark`); ``python -m benchmarks.run_all --quick`` runs
them all and renders the table.
"""
