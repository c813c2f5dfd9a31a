"""Paper-direction setting for a GPU/TPU host (not run in CI).

  python -m experiments.sola.main --config=experiments/sola/configs/full.py --workdir=runs/sola_full

SmolLM2-135M teacher, a 6-layer d = 384 student with a 4,096-token BPE,
128-token windows, spec-sized supports (K_c = 64, k = 16, R = 8, M = 145) and
100 Sinkhorn iterations. The teacher cache and every method group resume from
``<workdir>``.
"""

from experiments.sola.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      window_chars=520,
      max_len=128,
      n_train=4000,
      n_calib=600,
      n_eval=800,
      n_code=400,
      code_modules=(
        "textwrap",
        "string",
        "fractions",
        "heapq",
        "json.decoder",
        "argparse",
      ),
      student_vocab=4096,
      teacher_batch=32,
      kc=64,
      k=16,
      r=8,
      kd_blocks=96,
      iters=100,
      steps=3000,
      num_evals=10,
      batch_size=32,
      lr=1e-3,
      seeds=3,
    )
  )
  c.student.update(dict(d_model=384, n_layers=6, n_heads=6, ffn_dim=1536))
  return c
