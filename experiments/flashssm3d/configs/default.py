"""Default CPU-scale reproduction of FlashSSM-3D (synthetic proxy, a few minutes on 2 cores).

    python -m experiments.flashssm3d.main --config=experiments/flashssm3d/configs/default.py \
        --workdir=runs/flashssm3d

Trains a small alternating-attention teacher on procedural ``orbit_easy`` scenes (4 views,
32x32 px), distils SSM students from it on 25% of the teacher's scenes within 10% of its training
FLOPs ((a) regression, (b) + Procrustes, (c) + reprojection, plus a GT-trained student at the same
budget), evaluates all against GT and the teacher, and runs the view-scaling study (8..512 views).
"""

import ml_collections


def get_config():
    c = ml_collections.ConfigDict()
    c.seed = 0
    c.data = ml_collections.ConfigDict(dict(
        image_size=32, num_views=4, split="orbit_easy", pool_scenes=128, test_scenes=16, render_chunk=16, eval_batch=8,
        student_fraction=0.25))
    c.teacher = ml_collections.ConfigDict(dict(
        width=64, depth=2, heads=4, patch=4, registers=4, mlp_ratio=2, camera_stages=4,
        steps=200, batch_size=8, learning_rate=1e-3, warmup=20))
    c.student = ml_collections.ConfigDict(dict(
        width=48, depth=2, state=16, expand=1, patch=4, registers=4, mlp_ratio=2, camera_stages=4,
        method="scan", batch_size=8, learning_rate=1e-3, warmup=20, flops_fraction=0.1,
        max_steps=2000, min_steps=10))
    c.loss = ml_collections.ConfigDict(dict(
        camera=5.0, depth=1.0, points=1.0, grad=1.0, procrustes=1.0, reprojection=0.5,
        num_points=1024, reproj_delta=0.02))
    # "gt" (the same student trained on ground truth at the same budget) is also available.
    c.variants = ("regression", "procrustes", "reprojection")
    c.scaling = ml_collections.ConfigDict(dict(
        enabled=True, views=(8, 32, 64, 128, 256, 512), width=64, depth=2, state=16, heads=4,
        image_size=32, patch=4, time_cap_s=12.0, memory_cap_gb=4.0, repeats=1, fit_min_views=32))
    c.checkpoint_every = 200
    c.log_every = 50
    return c
