"""Paper-direction setting for a GPU/TPU host (not run in CI).

  python -m experiments.sola.main --config=experiments/sola/configs/full.py --workdir=runs/sola_full

SmolLM2-135M teacher, a 6-layer d = 384 student with a 4,096-token BPE, 128-token windows,
spec-sized supports (K_c = 64, k = 16, R = 8, M = 145) and 100 Sinkhorn iterations. The
teacher cache and every method group resume from ``<workdir>``.
"""

from experiments.sola.configs import default


def get_config():
  c = default.get_config()
  c.window_chars = 520
  c.max_len = 128
  c.n_train = 4000
  c.n_calib = 600
  c.n_eval = 800
  c.n_code = 400
  c.code_modules = ("textwrap", "string", "fractions", "heapq", "json.decoder", "argparse")
  c.student_vocab = 4096
  c.student.d_model = 384
  c.student.n_layers = 6
  c.student.n_heads = 6
  c.student.ffn_dim = 1536
  c.teacher_batch = 32
  c.kc = 64
  c.k = 16
  c.r = 8
  c.kd_blocks = 96
  c.iters = 100
  c.steps = 3000
  c.num_evals = 10
  c.batch_size = 32
  c.lr = 1e-3
  c.seeds = 3
  return c
