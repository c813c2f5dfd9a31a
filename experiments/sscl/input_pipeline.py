"""Data of the SSCL experiment: the shapes world, its context views and the probes' labels."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxpapers.sscl as S


def make_data(cfg) -> dict:
  """Training and test images of the shapes world and everything the grids read.

  For every test object, one deterministic context view: its box pasted onto another test
  image's background, in a window 2-3x the box. Patch labels of both class sets on
  ``cfg.probe_images`` training images and every test image feed the linear probes.

  Args:
    cfg: the experiment's typed ``Config``.

  Returns:
    numpy arrays keyed by name: ``train_images`` uint8 [n_train, S, S, 3], ``test_views``
    uint8 [n_test, K, S, S, 3], ``test_view_boxes`` [n_test, K, 4], ``test_target`` [n_test,
    S, S], ``prompts`` [C, L], ... (K = ``S.MAX_OBJECTS``).
  """
  tr = S.render_shapes_world(cfg.seed + 1, cfg.n_train, size=cfg.size)
  te = S.render_shapes_world(cfg.seed + 2, cfg.n_test, size=cfg.size)
  K = S.MAX_OBJECTS
  # one context view per test object: its box on another test image's background
  imgs = jnp.asarray(te.images, jnp.float32) / 255.0
  bgs = jnp.roll(jnp.asarray(te.backgrounds, jnp.float32) / 255.0, 1, axis=0)
  keys = jax.random.split(jax.random.key(cfg.seed + 3), cfg.n_test * K).reshape(cfg.n_test, K)

  def views_of(img, bg, boxes, ks):
    def one(box, k):
      v, b = S.make_context_views(k, img, box, n_views=1, scales=(2.0, 3.0), backgrounds=bg[None])
      return v[0], b[0]

    return jax.vmap(one)(boxes, ks)

  safe = np.where(te.valid[..., None], te.boxes, np.array([0, 0, 8, 8], np.float32))
  views, vboxes = jax.jit(jax.vmap(views_of))(imgs, bgs, jnp.asarray(safe), keys)
  fg_target, obj_labels = S.label_maps(te, cfg.classes)
  probe = {}
  n_probe = min(cfg.probe_images, cfg.n_train)
  for kind in S.CLASS_SETS:  # patch labels of both class sets for the linear probes
    probe[f"probe_train_{kind}"] = np.asarray(
      S.patch_labels(S.label_maps(tr, kind)[0][:n_probe], cfg.patch)
    )
    probe[f"probe_test_{kind}"] = np.asarray(S.patch_labels(S.label_maps(te, kind)[0], cfg.patch))
  return {
    **probe,
    "train_instance": tr.instance_map.astype(np.int32),
    "test_instance": te.instance_map.astype(np.int32),
    "train_images": tr.images,
    "train_bg": tr.backgrounds,
    "train_boxes": np.where(tr.valid[..., None], tr.boxes, 0).astype(np.float32),
    "train_valid": tr.valid,
    "train_captions": tr.captions,
    "test_images": te.images,
    "test_target": fg_target,
    "test_boxes": safe.astype(np.float32),
    "test_valid": te.valid,
    "test_labels": np.maximum(obj_labels, 0).astype(np.int32),
    "test_views": np.round(np.asarray(views) * 255).astype(np.uint8),  # [n, K, S, S, 3]
    "test_view_boxes": np.asarray(vboxes, np.float32),
    "prompts": S.class_prompts(cfg.classes),
  }
