"""E4 at n = 64 documents: the claims and rules of ``configs/e4.py``, unchanged.

  python -m experiments.margins.main_e4 --config=experiments/margins/configs/e4_n64.py --workdir=runs/margins_e4_n64

The same design as ``configs/e4.py`` with twice the documents: n = 64, k = 3
(C(64, 3) = 41,664 rows), N in {40, ..., 4960} over nested random families (the
same 2.1 decades), 5 seeds, the same FISTA budgets. Each seed solves only its
own 4960 rows and the source only their union (``all_rows = False``: the same
margins for those rows at an eighth of the cost). The d grid is the half-octave
grid of ``configs/e4.py`` without d = 4096 (at n = 32 both projections had kept
half the margin by d = 1,118 in every seed and N), fixed before the run for its
CPU cost.
"""

from experiments.margins.configs import e4


def get_config():
  c = e4.get_config()
  c.n = 64
  c.ds = c.ds[:-1]  # without d = 4096
  c.all_rows = False
  # the rules of configs/e4.py, on this d grid
  c.claims = e4.claims_for(c.ds, c.seeds)
  return c
