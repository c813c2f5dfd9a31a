"""Equal-parameter, equal-trial search at the paper's epochs (``experiments/panda/search.py``).

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
  python -m experiments.panda.main --config=experiments/panda/configs/budget.py \\
      --workdir=runs/panda_budget --config.data_dir=../shared/data

The search of ``configs/search.py`` with the budget the paper's protocol implies, decided before
the run:

* **Equal trials**: 20 seeded draws per (dataset, backbone, arm), the same draws for both arms.
* **Equal parameters**: in every trial the PANDA arm's per-head width is set so that its model
  has the vanilla arm's parameter count for the same draw, within 10%
  (:func:`jaxpapers.panda.match_hidden`); the vanilla arm keeps the drawn width. The
  precondition ``param_match.max_abs_dev <= 0.10`` checks every matched trial.
* **The paper's training**: 500 epochs, test accuracy at the best-validation epoch, the
  selected configuration re-trained on 10 splits x 2 initialisations.
* **Datasets**: the three cheapest on this host (Texas, Cornell, email-Enron: 12 pairs), run to
  completion (no CPU budget), so the pairs judged are fixed in advance. Telegram is not among
  them, so the claim without Telegram is judged over the same pairs (the paper's caveat about
  Telegram applies to the full benchmark).

The claims keep ``configs/default.py``'s rule (held when the 95% interval reaches +5.18 pp,
partly when it clears 0 but not +5.18, not reproduced below 0, inconclusive when it straddles
0) with an interval that resamples pairs and then splits within pairs
(:func:`jaxpapers.core.cluster_bootstrap`; the half-width is that of the symmetric interval
containing the percentile one), and preconditions that make the budget part of the verdict.
The paper-scale run is the same config with all of ``configs/search.py``'s datasets and
``--config.trials=100`` on an accelerator.
"""

from experiments.panda.configs import default, search

_REQUIRES = (
  dict(
    metric="coverage.trials_per_cell",
    op=">=",
    value=20,
    why="each arm gets at least 20 tuning trials",
  ),
  dict(metric="coverage.epochs", op=">=", value=500, why="the paper trains 500 epochs"),
  dict(
    metric="param_match.max_abs_dev",
    op="<=",
    value=0.10,
    why="every PANDA trial has the vanilla draw's parameter count within 10%",
  ),
  dict(
    metric="cells",
    op=">=",
    value=12,
    why="all 12 declared (dataset, backbone) pairs finished",
  ),
)


def _claim(cid, statement, metric, noise, note):
  """``configs/default.py``'s claim and rule, with this run's metric, noise and preconditions
  in place of its parameter-matched control (the search matches parameters in every trial)."""
  base = {k: v for k, v in default.CLAIMS[0].items() if k != "controls"}
  return dict(
    base, id=cid, statement=statement, metric=metric, noise=noise, requires=_REQUIRES, note=note
  )


CLAIMS = (
  _claim(
    "mean_gain",
    "plugging PANDA into hypergraph backbones improves test accuracy on average, at equal "
    "parameters and trials",
    "mean_improvement_pp",
    "derived.mean_improvement_cluster95_half_pp",
    "mean over (dataset, backbone) pairs of PANDA - vanilla test accuracy; noise = half-width "
    "of the 95% two-level bootstrap interval (pairs, then splits)",
  ),
  _claim(
    "mean_gain_without_telegram",
    "the same gain over the pairs other than Telegram's",
    "derived.mean_improvement_without_telegram_pp",
    "derived.mean_improvement_without_telegram_cluster95_half_pp",
    "as mean_gain, over the pairs whose dataset is not Telegram",
  ),
)


def get_config():
  c = search.get_config()
  c.datasets = ("texas", "cornell", "email-Enron")
  c.trials = 20
  c.epochs = 500
  c.match_params = True
  c.max_cpu_s = 0.0  # run to completion: the pairs judged are the 12 declared ones
  c.claims = CLAIMS
  return c
