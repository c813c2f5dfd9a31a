"""CPU-scale reproduction (about 20 minutes on 2 busy CPU cores).

  python -m experiments.denseam.main --config=experiments/denseam/configs/default.py \
      --workdir=runs/denseam

The model, the settings and the transfer rule are in
experiments/denseam/README.md. The 12 learning rates 1e-3 * 2^i, i = -4..7,
reach down to 1/64 of the old grid's 4e-3 optimum, so an optimum that moves like
1/K stays inside the grid; the base width K0 = 16 is the smallest width.
"""

import math

import ml_collections

from jaxpapers.core import reporting as R


def get_config():
  c = ml_collections.ConfigDict()
  # <energy>:<parametrisation>
  c.settings = ("lse:derived", "poly3:standard", "poly3:derived")
  c.widths = (16, 64, 256, 1024)
  c.base_width = 16
  c.lrs = tuple(1e-3 * 2.0**i for i in range(-4, 8))
  c.steps = 200
  c.seeds = 8
  c.batch_size = 64
  c.dyn_steps = 4
  c.dt = 0.5
  c.beta = 1.0
  c.readout_scale = 4.0
  c.coord_widths = (16, 64, 256, 1024)
  c.coord_steps = 10
  c.coord_lr = 0.01
  # logistic regression on the pixels (the simple baseline)
  c.logreg_baseline = True
  c.data_seed = 0
  c.seed = 0
  # steps per compiled chunk and checkpoint (0 = all steps in one chunk)
  c.chunk = 0
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed
  # before the run.
  c.claims = claims_for(c)
  c.report = REPORT
  return c


_LOG = dict(logx=True, logy=True)
# The tables and figures, over experiments.denseam.train:report_view (its cells
# are text: a diverged value prints 'diverged').
REPORT = R.Report(
  view="experiments.denseam.train:report_view",
  tables=(
    R.Table(
      title="### eta*(K) and the best loss per width",
      over="view.widths",
      columns=R.columns(
        "setting={setting}; K={K}; eta* (seed mean)={eta}; "
        "eta* per seed={eta_seed}; best train loss={best}; test acc={acc}; "
        "untrained loss={init}"
      ),
    ),
    R.Table(
      title=(
        "### Transfer from K={config.widths.0} to K={config.widths.-1}\n\n"
        "ln(eta*(K_max) / eta*(K_min)) over paired seeds: "
        "mean ± 95% t half-width (geometric-mean ratio and its interval)."
      ),
      over="view.drift",
      columns=R.columns(
        "setting={key}; log drift of eta*={drift}; eta* spread (seed mean, "
        "max/min)={spread}; regret at K_max={regret}; "
        "seed optima on the grid edge={edge}; learns at every K={learns}; "
        "diverged runs={diverged}"
      ),
    ),
    R.Table(
      title="### Coordinate check (step 0; slope of log RMS against log K)",
      over="view.coord",
      columns=(
        *R.columns("setting={setting}; quantity={name}"),
        R.Column("K=[v]", "{v.[i]}", over="config.coord_widths"),
        *R.columns("slope={slope}"),
      ),
    ),
    R.Table(
      title="### Trivial baselines",
      over="view.baselines",
      columns=R.columns(
        "predictor={key}; train loss={loss}; test accuracy={acc}"
      ),
    ),
  ),
  figures=(
    R.Figure(
      "loss_vs_lr",
      R.Panel(
        over="view.curves",
        title="{key}",
        xlabel="base learning rate eta",
        ylabel="train loss after {config.steps} steps (seed mean)",
        ylim=(None, 5),
        series=(
          R.Series(over="widths", x="config.lrs", y="y", label="K={key}"),
        ),
        lines=(R.Line("metrics.baselines.uniform_loss"),),
        **_LOG,
      ),
      size=(4.2, 3.6),
    ),
    R.Figure(
      "eta_star_vs_k",
      *(
        R.Panel(
          xlabel="K (memories)",
          ylabel=ylabel,
          series=(
            R.Series(
              over="metrics.summary", x="config.widths", y=y, label=("{key}")
            ),
          ),
          **_LOG,
        )
        for y, ylabel in (
          ("eta_star", "eta*(K)"),
          ("best_loss", "best train loss"),
        )
      ),
      size=(4.5, 3.6),
    ),
    R.Figure(
      "coord_check",
      R.Panel(
        over="view.step0",
        title="{key} (step 0)",
        xlabel="K",
        series=(
          R.Series(
            over="settings", x="config.coord_widths", y="y", label=("{key}")
          ),
        ),
        **_LOG,
      ),
      size=(3.6, 3.4),
    ),
  ),
)


_BASELINES = {
  "uniform predictor loss": "baselines.uniform_loss",
  "logistic regression train loss": "baselines.logreg_train_loss",
}


# training loss of the uniform predictor over the ten digit classes
LN10 = 2.302585092994046
LN2 = math.log(2.0)  # transfer tolerance: eta* within a factor 2
LN4 = math.log(4.0)


def _tuned(setting, widths, lrs, indices, *, learns=True, seeds=True):
  """Preconditions of a setting at the widths ``indices`` (list indices, -1 =
  the largest K).

  The seed-mean loss-optimal learning rate lies strictly inside the grid; with
  ``learns``, the best seed-mean loss is below the uniform predictor's (the
  model learns); with ``seeds``, no seed's own optimum lies on the grid's edge
  at any width (each per-seed eta* is bracketed).
  """
  s = f"summary.{setting}"
  out = []
  for i in indices:
    k = widths[i]
    out += [
      dict(
        metric=f"{s}.best_lr_grid.{i}",
        op=op,
        value=float(edge),
        why=(
          f"{setting}, K = {k}: the loss-optimal learning rate lies {side} "
          f"the grid's {end} {edge:g}, so the grid brackets it"
        ),
      )
      for op, edge, side, end in (
        (">", min(lrs), "above", "smallest"),
        ("<", max(lrs), "below", "largest"),
      )
    ]
    if learns:
      out.append(
        dict(
          metric=f"{s}.best_loss.{i}",
          op="<",
          value=LN10,
          why=(
            f"{setting}, K = {k}: the best training loss is below the uniform "
            "predictor's ln 10, so the model learns at that width"
          ),
        )
      )
  if seeds:
    out.append(
      dict(
        metric=f"{s}.edge_fraction",
        op="<=",
        value=0.0,
        why=(
          f"{setting}: no seed's optimum lies on the grid's edge at any "
          "width, so every per-seed eta* is bracketed"
        ),
      )
    )
  return out


_DRIFT_NOTE = (
  "per seed, eta*(K) = vertex of a parabola in log eta through that seed's "
  "final training losses around its grid minimum (grid step 2x); "
  "measured = |mean over seeds of ln(eta*(K_max) / eta*(K_min))|, "
  "noise = its 95% t half-width (core.stats.log_ratio_interval), "
  "so held means the whole interval of the drift lies inside [1/2, 2]; "
  "+inf when the setting does not learn at every width"
)


def _transfers(setting, what, widths, requires, **extra):
  key = setting.replace(":", "_")
  return dict(
    id=f"{key}_eta_transfers",
    statement=(
      f"{what}: the loss-optimal Adam learning rate eta*(K) moves by less "
      "than a factor 2 (on a log scale, over paired seeds) from K = "
      f"{widths[0]} to K = {widths[-1]} memories"
    ),
    paper_text=(
      "explicit prescriptions transfer hyperparameters tuned on small "
      "DenseAMs to large ones, with excellent theory/experiment agreement "
      "(abstract; the paper's exponents and plots were not available)"
    ),
    metric=f"derived.{key}.abs_log_drift",
    noise=f"derived.{key}.log_drift_hw",
    direction="lower",
    requires=requires,
    held=LN2,
    partly=LN4,
    fmt=".2f",
    baselines=_BASELINES,
    note=_DRIFT_NOTE,
    **extra,
  )


def claims_for(c):
  """The claims of a config ``c``; its widths and learning-rate grid decide the
  preconditions."""
  every, top = range(len(c.widths)), (-1,)

  def tuned(setting, indices, **kw):
    return _tuned(setting, c.widths, c.lrs, indices, **kw)

  lse, poly_sp, poly_dv = "lse:derived", "poly3:standard", "poly3:derived"
  return (
    _transfers(
      lse,
      (
        "LSE energy, the prescription derived here (= standard "
        "parametrisation up to Adam's epsilon)"
      ),
      c.widths,
      tuned(lse, every),
    ),
    _transfers(
      poly_dv,
      (
        "cubic polynomial energy, the prescription derived here (gamma ~ 1/K, "
        "Adam eps ~ 1/K)"
      ),
      c.widths,
      tuned(poly_dv, every),
      # Standard parametrisation judged by the same rule on its point value: if
      # it also transfers, the test does not tell the prescription from doing
      # nothing.
      controls={
        "standard parametrisation": (
          f"derived.{poly_sp.replace(':', '_')}.abs_log_drift"
        )
      },
    ),
    dict(
      id="poly3_standard_eta_drifts",
      statement=(
        "under standard parametrisation the optimal learning rate of the "
        "cubic polynomial DenseAM shrinks by more than a factor 2 from K = "
        f"{c.widths[0]} to K = {c.widths[-1]} (the derivation predicts eta* ~ "
        "1/K)"
      ),
      paper_text=(
        "existing hyperparameter-transfer methods were not developed for "
        "weights shared across and within layers and rapidly peaking "
        "activations (abstract)"
      ),
      metric="derived.poly3_standard.log_shrink",
      noise="derived.poly3_standard.log_drift_hw",
      direction="higher",
      requires=tuned(poly_sp, every),
      held=LN2,
      fmt=".2f",
      note=(
        "measured = mean over seeds of ln(eta*(K_min) / eta*(K_max)), "
        "noise = its 95% t half-width; needs standard parametrisation to "
        "learn, with a bracketed optimum, at every width (otherwise there is "
        "no optimum to follow)"
      ),
    ),
    dict(
      id="poly3_standard_needs_rescaling",
      statement=(
        "standard parametrisation does not carry over to the polynomial "
        f"DenseAM: at K = {c.widths[-1]} its best training loss is at least "
        "1.5x the best under the derived prescription"
      ),
      paper_text=(
        "existing hyperparameter-transfer methods were not developed for "
        "weights shared across and within layers and rapidly peaking "
        "activations (abstract)"
      ),
      metric="derived.poly3_sp_over_derived_log_best_loss",
      noise="derived.poly3_sp_over_derived_log_best_loss_hw",
      direction="higher",
      # Both parametrisations tuned at the largest K (a standard run whose
      # optimum lies off the grid would be judged on a learning rate it was not
      # given), and the derived one learning there; the standard run's loss is
      # what the claim measures, so it is not required to learn.
      requires=tuned(poly_sp, top, learns=False, seeds=False)
      + tuned(poly_dv, top, seeds=False),
      held=math.log(1.5),
      partly=math.log(1.1),
      fmt=".2f",
      note=(
        "per seed: ln(best-over-eta final training loss at the largest K "
        "under standard / the same under the derived prescription); "
        "mean and 95% t half-width over seeds "
        "(core.stats.log_ratio_interval); +inf when standard has no finite "
        "loss at the largest K"
      ),
    ),
  )
