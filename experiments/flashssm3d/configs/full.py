"""Paper-scale setting for a GPU/TPU host (not run in CI; never run on the
2-core CPU machine).

    python -m experiments.flashssm3d.main --config=experiments/flashssm3d/configs/full.py \
        --workdir=runs/flashssm3d_full

Expected hardware: one 80 GB GPU (H100/A100) or a TPU v4/v5 slice; teacher
training is the bulk (~1-2 GPU-days at these sizes), the students use <= 10% of
the teacher's FLOPs by construction. Data: 64x64 renders of the ``orbit`` camera
split (wide azimuth spreads, random elevations, radii, FoVs and look-at jitter,
random wall colours, no fog; ``jaxpapers.flashssm3d._data``), 8 views per scene;
the teacher trains on 100,000 scenes, the students on the first 25%, all scored
on 512 test scenes from disjoint keys. The student runs the chunked scan,
rematerialises each block and computes its backbone in bfloat16; every batch is
sharded over all devices. The scaling study goes to 1024 views (compare
``scaling/views_in_10s_student`` with the paper's accelerator claim of 500+
views in under 10 s). Real data and a real teacher: set ``data.source='disk'``
and ``data.data_dir`` (scene folders ``train/`` and ``test/``, format in
``jaxpapers.flashssm3d.load_multiview_scenes``), save VGGT's outputs on the
training scenes with ``jaxpapers.flashssm3d.save_teacher_predictions``, then set
``teacher.cached_predictions`` (and ``teacher.cached_test_predictions``,
``teacher.train_flops``: VGGT's training FLOPs, which set the student's 10%
budget). No data or weights are shipped.
"""

from experiments.flashssm3d.configs import default


def get_config():
  c = default.get_config()
  c.data.update(
    dict(
      image_size=64,
      num_views=8,
      split="orbit",
      pool_scenes=100_000,
      test_scenes=512,
    )
  )
  c.teacher.update(
    dict(
      width=384,
      depth=12,
      heads=8,
      patch=8,
      steps=100_000,
      batch_size=32,
      learning_rate=3e-4,
      warmup=2000,
    )
  )
  c.student.update(
    dict(
      width=384,
      depth=12,
      patch=8,
      batch_size=32,
      learning_rate=3e-4,
      warmup=1000,
      max_steps=100_000,
      min_steps=1000,
      # accelerator path: L / chunk_size sequential steps with one chunk's state
      # in memory, jax.checkpoint per block, bf16 backbone with float32
      # parameters, state and heads
      method="chunked",
      chunk_size=256,
      remat=True,
      dtype="bfloat16",
    )
  )
  # batch split over jax.make_mesh((device_count,), ("data",))
  c.shard_batch = True
  c.loss.num_points = 8192
  c.scaling.update(
    dict(
      enabled=True,
      views=(8, 16, 32, 64, 128, 256, 512, 1024),
      width=384,
      depth=12,
      heads=8,
      image_size=64,
      patch=8,
      time_cap_s=60.0,
      memory_cap_gb=60.0,
    )
  )
  c.checkpoint_every = 2000
  c.log_every = 200
  return c
