"""CPU-scale reproduction (about 10 minutes on 2 busy CPU cores).

  python -m experiments.denseam.main --config=experiments/denseam/configs/default.py \
      --workdir=runs/denseam

DenseAM classifiers on the scikit-learn digits (N = 64 pixels + 10 label units, pixels
clamped, T = 4 Euler steps with dt = 0.5, readout scale 4), K in {16, 64, 256, 1024}
memories (64x in width), 9 Adam learning rates 1e-3 * 2^i, 3 seeds, 200 steps of batch 64,
no weight decay, no schedule. Settings: LSE (beta = 1) under standard parametrisation
(which is also our hypothesis H1 for LSE), and the cubic rectified polynomial (n = 3) under
standard parametrisation and under our hypothesis H1 (gamma = (K/K0)^-1, Adam eps likewise).
The base width K0 = 16 is the smallest width.
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.settings = ("lse:standard", "poly3:standard", "poly3:hypothesis")
  c.widths = (16, 64, 256, 1024)
  c.base_width = 16
  c.lrs = tuple(1e-3 * 2.0**i for i in range(9))
  c.steps = 200
  c.seeds = 3
  c.batch_size = 64
  c.dyn_steps = 4
  c.dt = 0.5
  c.beta = 1.0
  c.readout_scale = 4.0
  c.coord_widths = (16, 64, 256, 1024)
  c.coord_steps = 10
  c.coord_lr = 0.01
  c.logreg_baseline = True
  c.data_seed = 0
  c.seed = 0
  c.chunk = 0
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed before the run.
  c.claims = claims_for(c)
  return c


_BASELINES = {
  "uniform predictor loss": "baselines.uniform_loss",
  "logistic regression train loss": "baselines.logreg_train_loss",
}


LN10 = 2.302585092994046  # training loss of the uniform predictor over the ten digit classes


def _tuned(setting, widths, lrs, indices, *, learns=True):
  """Preconditions of a setting at the widths ``indices`` (list indices, -1 = the largest K).

  The loss-optimal learning rate on the grid lies strictly inside the grid (so the vertex or the
  argmin is bracketed), and, with ``learns``, the best loss is below the uniform predictor's
  (the model learns).
  """
  s = f"summary.{setting}"
  out = []
  for i in indices:
    k = widths[i]
    out += [
      dict(
        metric=f"{s}.best_lr_grid.{i}",
        op=">",
        value=float(min(lrs)),
        why=f"{setting}, K = {k}: the loss-optimal learning rate lies above the grid's smallest "
        f"{min(lrs):g}, so the grid brackets it",
      ),
      dict(
        metric=f"{s}.best_lr_grid.{i}",
        op="<",
        value=float(max(lrs)),
        why=f"{setting}, K = {k}: the loss-optimal learning rate lies below the grid's largest "
        f"{max(lrs):g}, so the grid brackets it",
      ),
    ]
    if learns:
      out.append(
        dict(
          metric=f"{s}.best_loss.{i}",
          op="<",
          value=LN10,
          why=f"{setting}, K = {k}: the best training loss is below the uniform predictor's "
          "ln 10, so the model learns at that width",
        )
      )
  return out


def _spread(setting, what, requires):
  return dict(
    id=f"{setting}_eta_transfers",
    statement=f"{what}: the loss-optimal Adam learning rate eta*(K) stays within a factor 2 "
    "over 64x in the number of memories K",
    paper_text="explicit prescriptions transfer hyperparameters tuned on small DenseAMs to "
    "large ones, with excellent theory/experiment agreement (abstract; the paper's exponents "
    "and plots were not available)",
    metric=f"derived.{setting}.eta_spread",
    direction="lower",
    requires=requires,
    held=2.0,
    partly=4.0,
    fmt=".2f",
    baselines=_BASELINES,
    note="eta*(K) = vertex of a parabola in log eta through the seed-mean final training losses "
    "around the grid minimum (grid step 2x); measured = max_K eta* / min_K eta* over "
    "K in {16, 64, 256, 1024}; the rule (factor 2 over 64x) is the one fixed in the spec",
  )


def _regret(setting, what, requires):
  return dict(
    id=f"{setting}_tuned_small_works_large",
    statement=f"{what}: the learning rate tuned at K = 16 gives, at K = 1024, a training loss "
    "within 1% of the best learning rate at K = 1024",
    paper_text="hyperparameters tuned on small models can be transferred to models trained at "
    "scale (abstract)",
    metric=f"derived.{setting}.transfer_regret",
    noise=f"derived.{setting}.transfer_regret_ci95",
    direction="lower",
    requires=requires,
    held=0.01,
    partly=0.10,
    fmt=".3f",
    baselines=_BASELINES,
    note="grid argmin of the seed-mean loss at K = 16 applied at K = 1024; measured = "
    "L(K=1024, eta_16) / min_eta L(K=1024, eta) - 1; noise = 95% CI over seeds of the same "
    "quantity computed per seed",
  )


def claims_for(c):
  """The claims of a config ``c``; its widths and learning-rate grid decide the preconditions.

  eta*(K) is read at every width, the transfer regret at the smallest and the largest, and the
  standard / hypothesis loss ratio at the largest.
  """
  every, ends, top = range(len(c.widths)), (0, -1), (-1,)

  def tuned(setting, indices, learns=True):
    return _tuned(setting, c.widths, c.lrs, indices, learns=learns)

  lse, poly_sp, poly_h1 = "lse:standard", "poly3:standard", "poly3:hypothesis"
  return (
    _spread(
      "lse_standard",
      "LSE energy, standard parametrisation (= our hypothesis H1 for LSE)",
      tuned(lse, every),
    ),
    _regret("lse_standard", "LSE energy, standard parametrisation", tuned(lse, ends)),
    _spread(
      "poly3_hypothesis",
      "cubic polynomial energy, hypothesis H1 (gamma ~ 1/K)",
      tuned(poly_h1, every),
    ),
    _regret(
      "poly3_hypothesis",
      "cubic polynomial energy, hypothesis H1 (gamma ~ 1/K)",
      tuned(poly_h1, ends),
    ),
    dict(
      id="poly3_standard_needs_rescaling",
      statement="standard parametrisation does not carry over to the polynomial DenseAM: at "
      "K = 1024 its best training loss is at least 1.5x the best under the width-aware "
      "parametrisation",
      paper_text="existing hyperparameter-transfer methods were not developed for weights shared "
      "across and within layers and rapidly peaking activations (abstract)",
      metric="derived.poly_sp_over_hyp_best_loss",
      noise="derived.poly_sp_over_hyp_best_loss_ci95",
      direction="higher",
      # Both parametrisations tuned at the largest K (a standard run whose optimum lies off the
      # grid would be judged on a learning rate it was not given), and H1 learning there; the
      # standard run's loss is what the claim measures, so it is not required to learn.
      requires=tuned(poly_sp, top, learns=False) + tuned(poly_h1, top),
      held=1.5,
      partly=1.1,
      fmt=".2f",
      note="per seed: best-over-eta final training loss at K = 1024 under standard divided by "
      "the same under hypothesis H1; mean and 95% CI over seeds (inf when standard diverges "
      "at every eta)",
    ),
  )
