"""Smoke configuration, used by the tests and the notebook (JAXPAPERS_SMOKE=1).

Every phase but view extrapolation runs (rendering, teacher training with its
camera-only first phase, teacher targets, distillation, evaluation against GT
and the teacher, checkpointing, plots) on the smallest shapes: seconds of
compute, plus about a minute of XLA compiling on 2 cores (seconds with a warm
cache), so the models have one block and one camera stage and there is one
distillation variant ("reprojection": every loss term on teacher targets).
"""

from experiments.flashssm3d.configs import default


def get_config():
  c = default.get_config()
  c.data.update(
    dict(
      image_size=16,
      num_views=2,
      pool_scenes=8,
      test_scenes=4,
      render_chunk=4,
      eval_batch=4,
    )
  )
  c.teacher.update(
    dict(
      width=16,
      depth=1,
      heads=2,
      registers=1,
      steps=4,
      batch_size=2,
      warmup=1,
      camera_stages=1,
    )
  )
  # the camera-only first phase (configs/cameras.py): 2 of 4 steps
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
    )
  )
  c.student.update(dict(max_steps=2, min_steps=2, flops_fraction=1.0))
  c.loss.num_points = 32
  # each further variant: one more train-step compilation
  c.variants = ("reprojection",)
  c.seeds = 1
  # view extrapolation (another render and view count to compile) runs in a slow
  # test
  c.extrapolation_factors = ()
  c.extrapolation_scenes = 4
  c.checkpoint_every = 4  # one checkpoint per phase (at its last step)
  c.log_every = 2
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
