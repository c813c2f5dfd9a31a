"""CPU-scale reproduction (a few minutes on 2 CPU cores).

  python -m experiments.evidence_coverage.main \
      --config=experiments/evidence_coverage/configs/default.py --workdir=runs/evidence_coverage

Shifted local linear ICL (d = 16, J = 64 task clusters, a pool of 10k examples), 750 queries
per cell (250 dev queries calibrate the threshold controller, 500 test queries give every
curve), top-k in {1, 2, 4, ..., 512} from one dense retrieval, shift grid
(s_x, s_w) in {0, 1, 2}^2, 3 seeds. Readers: one-step GD (fixed eta), ridge (fixed lambda),
prior-only. Contexts: retrieved, oracle, labels-shuffled, other-query, random.
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.d = 16
  c.n_clusters = 64
  c.r = 2.0
  c.tau_w = 0.1
  c.noise = 0.1
  c.n_pool = 10000
  c.n_dev = 250
  c.n_test = 500
  c.ks = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
  c.s_x = (0.0, 1.0, 2.0)
  c.s_w = (0.0, 1.0, 2.0)
  c.seeds = 3
  c.seed = 0
  c.ridge_lam = 1.0
  c.eta_scale = 1.0  # eta = eta_scale / mean_pool |x|^2, fixed across k
  c.tol_rel = 0.25  # answer correct when |yhat - y| < tol_rel * std(pool y)
  c.regime_tol = 0.01
  c.decline_tol = 0.02  # a drop of accuracy beyond this counts as a decline
  c.recall_rise = 0.1  # recall must rise by at least this after the accuracy peak
  c.use_mesh = True  # shard queries over all devices when the test split divides
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed before the run.
  c.claims = CLAIMS
  return c


CLAIMS = (
  dict(
    id="recall_accuracy_decoupling",
    statement="recall keeps rising after answer accuracy has peaked and declined (finite readers)",
    paper_text="falsifiable prediction: recall can keep rising after answer accuracy has "
    "saturated or declined (abstract)",
    metric="derived.decoupling_fraction_min",
    direction="higher",
    held=0.75,
    partly=0.5,
    fmt=".2f",
    controls={
      "oracle context (GD)": "derived.decoupling_fraction_gd_oracle",
      "oracle context (ridge)": "derived.decoupling_fraction_ridge_oracle",
    },
    note="fraction of (shift, seed) cells where accuracy at k_max is below its peak by more "
    "than decline_tol and Recall@k_max exceeds Recall at the peak k by at least recall_rise; "
    "the minimum over the GD and ridge readers. Controls: the same fraction with oracle "
    "context (only aligned evidence) for each reader; a reader whose accuracy also declines "
    "on aligned evidence shows a decline that off-direction evidence does not explain",
  ),
  dict(
    id="shuffled_controls_fall_to_prior",
    statement="shuffled-context controls lose the retrieval gain (gains come from evidence)",
    paper_text="dense top-k sweeps together with oracle and shuffled-context controls expose "
    "this recall--accuracy decoupling (abstract)",
    metric="derived.shuffled_gain_kept_max",
    direction="lower",
    held=0.2,
    partly=0.4,
    fmt=".2f",
    baselines={"random context": "derived.random_gain_kept_max"},
    note="(best-k accuracy of the control - prior-only accuracy) / (best-k retrieved accuracy - "
    "prior-only accuracy), averaged over cells whose retrieved gain is >= 0.05; the maximum "
    "over readers {GD, ridge} and controls {labels shuffled, other query's list}",
  ),
  dict(
    id="budget_boundary_ridge",
    statement="the coverage margin's boundary k* predicts the accuracy peak (ridge reader)",
    paper_text="retrieval is useful only while aligned evidence grows faster than "
    "reader-facing ambiguity (abstract)",
    metric="derived.kstar_within_2x_ridge",
    direction="higher",
    held=0.75,
    partly=0.5,
    fmt=".2f",
    controls={"constant k (median peak)": "derived.constant_k_within_2x_ridge"},
    note="fraction of cells with |log2 k* - log2 k_peak| <= 1, k* = argmax_k k Delta(k) "
    "(reconstruction); the constant-k baseline uses the median peak over all cells (an "
    "in-sample oracle constant), so a k* no better than it adds nothing",
  ),
  dict(
    id="budget_boundary_gd",
    statement="the coverage margin's boundary k* predicts the accuracy peak (one-step GD reader)",
    paper_text="a conditional transfer result extends the same budget boundary to frozen "
    "readers (abstract)",
    metric="derived.kstar_within_2x_gd",
    direction="higher",
    held=0.75,
    partly=0.5,
    fmt=".2f",
    controls={"constant k (median peak)": "derived.constant_k_within_2x_gd"},
    note="as budget_boundary_ridge, for the finite one-step GD reader",
  ),
)
