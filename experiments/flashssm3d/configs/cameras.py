"""The default run with a teacher that sees the cameras (CPU scale; ~1-2 h on 2
busy cores).

    nice -n 19 python -m experiments.flashssm3d.main \\
        --config=experiments/flashssm3d/configs/cameras.py --workdir=runs/flashssm3d_cameras

``configs/default.py``'s pipeline, claims and rules, with the teacher's training
and the data changed so that the teacher can learn the cameras (which the
distillation claims require):

* **a camera phase**: the teacher trains on the camera term alone for its first
  ``teacher.camera_steps`` steps, then on every term (same optimizer and
  schedule). Trained on every term from the start, the camera token stays at the
  constant pose of smallest L1 error.
* **thinner fog** (``data.fog``; ``orbit_cues``' own density is 0.35 per unit of
  depth): the far walls, coloured by their world orientation, keep enough colour
  at 16 px for each view's heading to be read from them; depth stays shaded by
  distance.
* **a longer teacher run on a larger pool**, the students still on 25% of the
  pool within 10% of the teacher's training FLOPs (both phases count), and more
  test scenes.

The preconditions of the distillation claims ask for one margin over the
mean-pose predictor (``m = 0.05``, the margin of AUC@30) on RRA@15, RTA@15 and
AUC@30, and a lower ATE.
"""

from experiments.flashssm3d.configs import default

TEACHER_SEES_CAMERAS = default.teacher_sees_cameras(margin=0.05)

# default.py's claims, with these preconditions wherever default.py has its own.
CLAIMS = tuple(
  dict(c, requires=TEACHER_SEES_CAMERAS) if "requires" in c else dict(c)
  for c in default.CLAIMS
)


def get_config():
  c = default.get_config()
  c.data.update(dict(fog=0.1, pool_scenes=1024, test_scenes=64))
  c.teacher.update(dict(steps=2500, camera_steps=1500))
  c.claims = CLAIMS
  return c
