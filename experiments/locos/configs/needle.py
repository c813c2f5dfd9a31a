"""LOCOS on long-context needle probes at 1k / 2k / 4k tokens
(SmolLM2-135M-Instruct).

  python -m experiments.locos.main --config=experiments/locos/configs/needle.py \
      --workdir=runs/locos_needle

Probes from `locos.make_needle_probes` (a `pydoc_data` haystack), detection and
evaluation over disjoint entity halves, ROUGE-L unablated and with the top-k
LOCOS / contrastive heads mean-query ablated; blockwise prefill, prompts padded
to `lm.bucket_length(T)`. No claims.
"""

import ml_collections

from experiments.locos.configs import default
from jaxpapers.core import reporting as R

# One row per context length: its probes, the accepted detection trials and the
# mean ROUGE-L of every condition ('not run': no probe to ablate).
REPORT = R.Report(
  view="experiments.locos.needle:report_view",
  tables=(
    R.Table(
      over="view.rows",
      when="view.rows.0",
      columns=(
        *R.columns(
          "context=T:d; eval probes=probes:d; accepted detection=accepted"
        ),
        R.Column(
          "[v]",
          "rougeL.[v]",
          ".2f",
          missing="not run",
          over=("view.conditions"),
        ),
      ),
    ),
  ),
)


def get_config():
  c = default.get_config()
  n = c.needle = ml_collections.ConfigDict()
  n.update(
    context_tokens=(1024, 2048, 4096),
    depths=(0.25, 0.5, 0.75),
    num_detect=6,
    num_eval=6,
  )
  n.update(
    detectors=("locos", "contrastive"), ks=(5, 20), max_steps=8, batch_size=2
  )
  n.update(num_random=0, ablate_answered=False, num_resamples=0)
  c.claims = ()
  c.issue_verdicts = False
  c.report = REPORT
  return c
