"""LOCOS at long context on SmolLM2-135M-Instruct: >= 100 needle probes at 4k
tokens, judged.

  python -m experiments.locos.main --config=experiments/locos/configs/size_needle.py \
    --workdir=runs/locos_size_needle

`needle.py`'s probes at 4,096 tokens, fixed before the run: 24 detection and 168
evaluation probes, ablations on the answered ones at k = 12 (the paper's share
of heads of SmolLM2's
270) for LOCOS, contrastive attention and random heads, paired bootstrap
     intervals.
"""

from experiments.locos.configs import needle

T = 4096
K = 12
MIN_PROBES = 100


def needle_claims(track="smollm2", model="SmolLM2", t=T, k=K):
  """The long-context claim on `needle/T=<t>` at k (see the module
  docstring)."""
  at = f"needle/T={t}"
  pair = f"{at}.paired.k={k}"
  return (
    dict(
      id=f"long_context_locos_beats_contrastive_{track}",
      statement=(
        f"mean-ablating the top {k} LOCOS heads lowers long-context "
        f"non-literal retrieval (ROUGE-L, {t}-token needle probes) more than "
        f"ablating the top {k} contrastive-attention heads ({model}; "
        "probes the model answers)"
      ),
      paper_text=(
        "Qwen3-8B, NoLiMa (1k-32k tokens): 50 LOCOS heads take ROUGE-L 0.401 "
        "-> 0.000; the best baseline keeps 0.292"
      ),
      metric=f"{pair}.contrastive_minus_locos.mean",
      noise=f"{pair}.contrastive_minus_locos.halfwidth",
      direction="higher",
      held=0.0,
      chance=0.0,
      fmt="+.2f",
      requires=[
        dict(
          metric=f"{at}.ablated_probes",
          op=">=",
          value=float(MIN_PROBES),
          why=(
            f"at least {MIN_PROBES} long-context probes that the unablated "
            "model answers, so that an ablation can lower retrieval and the "
            "paired interval is narrow"
          ),
        ),
        dict(
          metric=f"{at}.accepted_detection",
          op=">=",
          value=8.0,
          why=(
            "the detectors score heads on at least 8 answered detection "
            "trials (LOCOS and the attention scores average over answered "
            "trials only)"
          ),
        ),
      ],
      controls={
        "random heads in LOCOS's place": (
          f"{pair}.contrastive_minus_random.mean"
        ),
      },
      note=(
        "measured = mean over the ablated probes of (contrastive-ablated "
        "minus LOCOS-ablated ROUGE-L); noise = half-width of its paired 95% "
        "bootstrap interval; held when the interval lies above 0 (chance 0: "
        "no difference)"
      ),
    ),
  )


def get_config():
  c = needle.get_config()
  n = c.needle
  n.update(
    context_tokens=(T,),
    num_detect=24,
    num_eval=168,
    detectors=("locos", "contrastive"),
  )
  n.update(ks=(K,), num_random=5, ablate_answered=True, num_resamples=10_000)
  c.claims = needle_claims()
  c.issue_verdicts = True
  return c
