"""Smoke configuration, used by the tests and the notebook (JAXPAPERS_SMOKE=1).

Every phase of the experiment but view extrapolation runs (rendering, teacher training, teacher
targets, distillation, evaluation against GT and the teacher, checkpointing, plots) on the
smallest shapes: seconds of compute. The rest is XLA compiling each phase's program (about a
minute on 2 cores, seconds with a warm compilation cache), so the models have one block and one
camera stage (Python loops, unrolled into the compiled programs) and one distillation variant.
"""

from experiments.flashssm3d.configs import default


def get_config():
  c = default.get_config()
  c.data.update(
    dict(image_size=16, num_views=2, pool_scenes=8, test_scenes=4, render_chunk=4, eval_batch=4)
  )
  c.teacher.update(
    dict(width=16, depth=1, heads=2, registers=1, steps=4, batch_size=2, warmup=1, camera_stages=1)
  )
  # the teacher's camera-only first phase (configs/cameras.py) runs too: 2 of its 4 steps
  c.teacher.camera_steps = 2
  c.student.update(
    dict(
      width=16,
      depth=1,
      state=4,
      registers=1,
      batch_size=2,
      warmup=1,
      camera_stages=1,
      max_steps=2,
      min_steps=2,
      flops_fraction=1.0,
    )
  )
  c.loss.num_points = 32
  # "reprojection" runs every loss term (regression, Procrustes, reprojection) on teacher
  # targets; each further variant costs one more train-step compilation (~1/4 of the run).
  c.variants = ("reprojection",)
  c.seeds = 1
  # view extrapolation costs a render and two forward compilations at another view count: the
  # smoke run leaves it out (tests/flashssm3d/test_experiment.py runs it in a slow test)
  c.extrapolation_factors = ()
  c.extrapolation_scenes = 4
  c.checkpoint_every = 4  # one checkpoint per phase (at its last step)
  c.log_every = 2
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
