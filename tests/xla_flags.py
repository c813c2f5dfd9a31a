"""XLA flags for running the project's compile-bound smoke programs (tests and
notebooks)."""

import os


def fast_compile(flags: str) -> str:
  """``flags`` (an ``XLA_FLAGS`` string) plus
  ``--xla_backend_optimization_level=0``.

  The tests and notebooks run tiny shapes, so XLA's compile time is most of
  their time and the speed of the generated code hardly matters: without LLVM's
  optimisation passes the FlashSSM-3D smoke run compiles in half the time (42 s
  -> 21 s). Results may differ in the last bits (no fused multiply-adds), which
  the tests' tolerances allow. ``JAXPAPERS_TEST_XLA_OPT=1``, or a level already
  in ``flags``, keeps it as it is.
  """
  if os.environ.get("JAXPAPERS_TEST_XLA_OPT", "0") not in ("", "0"):
    return flags
  if "xla_backend_optimization_level" in flags:
    return flags
  return f"{flags} --xla_backend_optimization_level=0".strip()
