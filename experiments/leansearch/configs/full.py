"""Larger setting (not run in CI): all of the Coq standard library, 5 splits,
every test query, a wider encoder trained longer, deeper reasoning output.

  python -m experiments.leansearch.main --config=experiments/leansearch/configs/full.py --workdir=runs/leansearch_full

The paper's own setting (Mathlib, Qwen3-Embedding-8B, Qwen3-Reranker-8B, an LLM
planner) needs a Lean 4 + Mathlib build and network access; it is not
reproducible offline. The library's :func:`jaxpapers.leansearch.lm_reranker`
(the shared small LM as a yes/no reranker) and
:func:`jaxpapers.leansearch.e5_embedder` plug into ``TwoStageRetriever`` on an
accelerator host.
"""

from experiments.leansearch.configs import default


def get_config():
  c = default.get_config()
  c.splits = 5
  c.max_single_queries = 100_000
  c.max_premise_queries = 100_000
  c.dim = 256
  c.hidden = 512
  c.steps = 6000
  return c
