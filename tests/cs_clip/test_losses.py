"""The CS-CLIP loss against a float64 numpy transcription of the reference's
per-slot loops."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxpapers.cs_clip as C

B, U, D = 6, 3, 5
SCALE = 7.0


def _unit(x):
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def data():
  rng = np.random.default_rng(0)
  img = _unit(rng.normal(size=(B, D)))
  full = _unit(rng.normal(size=(B, D)))
  ffoil = _unit(rng.normal(size=(B, D)))
  units = _unit(rng.normal(size=(B, U, D)))
  foils = _unit(rng.normal(size=(B, U, D)))
  mask = rng.random((B, U)) < 0.6
  mask[:, 2] = False  # an empty slot (counts as 0 in the mean over slots)
  mask[0, 0] = mask[1, 0] = True
  para = _unit(rng.normal(size=(B, D)))
  return dict(
    img=img,
    full=full,
    ffoil=ffoil,
    units=units,
    foils=foils,
    mask=mask,
    para=para,
  )


def f32(*xs):
  return [np.asarray(x, np.float32) for x in xs]


# ---------------------------------------- float64 reference (explicit loops) --


def _ce(logits, label):
  m = logits.max()
  return np.log(np.exp(logits - m).sum()) + m - logits[label]


def ref_clip(img, txt, scale, neg=None, hard=None):
  """Reference semantics on already-compressed rows; neg: [E, D] extra columns
  for every row; hard: [n, D] one extra column per row."""
  n = img.shape[0]
  if n == 0:
    return 0.0
  i2t = t2i = 0.0
  for b in range(n):
    row = [scale * img[b] @ txt[j] for j in range(n)]
    if neg is not None:
      row += [scale * img[b] @ e for e in neg]
    if hard is not None:
      row += [scale * img[b] @ hard[b]]
    i2t += _ce(np.array(row), b)
    t2i += _ce(np.array([scale * txt[b] @ img[j] for j in range(n)]), b)
  return 0.5 * (i2t + t2i) / n


def ref_component(d, kind):
  out = []
  for u in range(U):
    v = d["mask"][:, u]
    img, t, f = d["img"][v], d["units"][v, u], d["foils"][v, u]
    if kind == "clip":
      out.append(ref_clip(img, t, SCALE))
    elif kind == "negclip":
      out.append(ref_clip(img, t, SCALE, neg=f))
    else:
      out.append(ref_clip(img, t, SCALE, hard=f))
  return np.mean(out)


def ref_align(d, kind, margin):
  vals = []
  for b in range(B):
    for u in range(U):
      if d["mask"][b, u]:
        sp = np.clip(d["img"][b] @ d["units"][b, u], -1, 1)
        sn = np.clip(d["img"][b] @ d["foils"][b, u], -1, 1)
        vals.append(1 - sp if kind == "cosine" else max(0.0, margin - sp + sn))
  return np.mean(vals) if vals else 0.0


def ref_rank(d, margin, reduction):
  per = []
  for b in range(B):
    sf = d["img"][b] @ d["full"][b]
    v = [
      max(0.0, margin + d["img"][b] @ d["units"][b, u] - sf)
      if d["mask"][b, u]
      else 0.0
      for u in range(U)
    ]
    k = d["mask"][b].sum()
    per.append(max(v) if reduction == "max" else sum(v) / max(k, 1))
  return np.mean(per)


def ref_text(d, margin):
  vals = [
    max(
      0.0,
      margin
      - d["full"][b] @ d["units"][b, u]
      + d["full"][b] @ d["foils"][b, u],
    )
    for b in range(B)
    for u in range(U)
    if d["mask"][b, u]
  ]
  return np.mean(vals)


def ref_para(full, para, valid, scale):
  f, p = full[valid], para[valid]
  n = f.shape[0]
  return np.mean(
    [
      _ce(np.array([scale * f[b] @ p[j] for j in range(n)]), b)
      for b in range(n)
    ]
  )


# --------------------------------------------------------------------- tests --


def test_clip_and_negclip(data):
  d = data
  got = C.clip_loss(*f32(d["img"], d["full"]), SCALE)
  np.testing.assert_allclose(
    got, ref_clip(d["img"], d["full"], SCALE), rtol=1e-5
  )
  got = C.negclip_loss(*f32(d["img"], d["full"], d["ffoil"]), SCALE)
  want = ref_clip(d["img"], d["full"], SCALE, neg=d["ffoil"])
  np.testing.assert_allclose(got, want, rtol=1e-5)


def test_negclip_foils_are_image_to_text_columns_only(data):
  """Foils enter the i2t softmax only: the t2i half equals CLIP's, so the
  difference of the two losses is half the difference of the i2t terms (a
  symmetrised version fails this)."""
  d = data
  clip = ref_clip(d["img"], d["full"], SCALE)
  neg = float(C.negclip_loss(*f32(d["img"], d["full"], d["ffoil"]), SCALE))
  i2t_clip = np.mean(
    [_ce(SCALE * d["full"] @ d["img"][b], b) for b in range(B)]
  )
  i2t_neg = np.mean(
    [
      _ce(SCALE * np.concatenate([d["full"], d["ffoil"]]) @ d["img"][b], b)
      for b in range(B)
    ]
  )
  np.testing.assert_allclose(neg - clip, 0.5 * (i2t_neg - i2t_clip), rtol=1e-4)


@pytest.mark.parametrize("kind", C.COMP_TYPES)
def test_component_loss_matches_reference_loops(data, kind):
  d = data
  got = C.component_loss(
    *f32(d["img"], d["units"], d["foils"]), d["mask"], SCALE, kind=kind
  )
  np.testing.assert_allclose(got, ref_component(d, kind), rtol=1e-5)


def test_component_kinds_differ(data):
  d = data
  vals = {
    k: float(
      C.component_loss(
        *f32(d["img"], d["units"], d["foils"]), d["mask"], SCALE, kind=k
      )
    )
    for k in C.COMP_TYPES
  }
  assert vals["clip"] < vals["negclip_hard"] < vals["negclip"]


@pytest.mark.parametrize("kind", C.ALIGN_TYPES)
def test_alignment(data, kind):
  d = data
  got = C.alignment_loss(
    *f32(d["img"], d["units"], d["foils"]), d["mask"], kind=kind, margin=0.3
  )
  np.testing.assert_allclose(got, ref_align(d, kind, 0.3), rtol=1e-5)


@pytest.mark.parametrize("reduction", C.RANK_REDUCTIONS)
def test_rank(data, reduction):
  d = data
  got = C.rank_loss(
    *f32(d["img"], d["full"], d["units"]),
    d["mask"],
    margin=0.2,
    reduction=reduction,
  )
  np.testing.assert_allclose(got, ref_rank(d, 0.2, reduction), rtol=1e-5)


def test_text_and_paraphrase(data):
  d = data
  got = C.text_margin_loss(
    *f32(d["full"], d["units"], d["foils"]), d["mask"], margin=0.4
  )
  np.testing.assert_allclose(got, ref_text(d, 0.4), rtol=1e-5)
  valid = np.array([1, 1, 0, 1, 0, 1], bool)
  got = C.paraphrase_loss(*f32(d["full"], d["para"]), valid, SCALE)
  np.testing.assert_allclose(
    got, ref_para(d["full"], d["para"], valid, SCALE), rtol=1e-5
  )


def test_total_is_the_weighted_sum(data):
  d = data
  cfg = C.CSLossConfig(lambda_text=0.3, lambda_para=0.2, rank_reduction="max")
  total, terms = C.cs_clip_loss(
    *f32(d["img"], d["full"], d["ffoil"], d["units"], d["foils"]),
    d["mask"],
    SCALE,
    cfg,
    paraphrase=np.float32(d["para"]),
  )
  want = {
    "full": ref_clip(d["img"], d["full"], SCALE, neg=d["ffoil"]),
    "comp": ref_component(d, "negclip_hard"),
    "align": ref_align(d, "margin", 0.1),
    "rank": ref_rank(d, 0.1, "max"),
    "text": ref_text(d, 0.1),
    "para": ref_para(d["full"], d["para"], np.ones(B, bool), SCALE),
  }
  for k, v in want.items():
    np.testing.assert_allclose(terms[k], v, rtol=1e-5, err_msg=k)
  lam = {k: getattr(cfg, f"lambda_{k}") for k in C.TERMS}
  np.testing.assert_allclose(
    total, sum(lam[k] * want[k] for k in C.TERMS), rtol=1e-5
  )


def test_reduces_to_clip_without_units(data):
  d = data
  args = f32(d["img"], d["full"], d["ffoil"])
  clip = ref_clip(d["img"], d["full"], SCALE)
  cfg = C.CSLossConfig(negatives_full=False, lambda_text=0.5)
  empty = np.zeros((B, 0, D), np.float32)
  total, _ = C.cs_clip_loss(
    *args, empty, empty, np.zeros((B, 0), bool), SCALE, cfg
  )
  np.testing.assert_allclose(total, clip, rtol=1e-5)
  units, foils = f32(d["units"], d["foils"])
  total, terms = C.cs_clip_loss(
    *args, units, foils, np.zeros((B, U), bool), SCALE, cfg
  )
  np.testing.assert_allclose(total, clip, rtol=1e-5)
  assert float(terms["comp"]) == 0.0


def test_padding_content_is_ignored_and_gradients_finite(data):
  d = data
  units, foils = f32(d["units"], d["foils"])
  junk_u, junk_f = units.copy(), foils.copy()
  junk_u[~d["mask"]] = _unit(np.ones(D))
  junk_f[~d["mask"]] = _unit(-np.ones(D))
  img, full, ff = f32(d["img"], d["full"], d["ffoil"])
  cfg = C.CSLossConfig(comp_type="negclip", lambda_text=0.1)
  a, _ = C.cs_clip_loss(img, full, ff, units, foils, d["mask"], SCALE, cfg)
  b, _ = C.cs_clip_loss(img, full, ff, junk_u, junk_f, d["mask"], SCALE, cfg)
  np.testing.assert_allclose(a, b, rtol=1e-6)
  g = jax.jit(
    jax.grad(
      lambda x: C.cs_clip_loss(
        x, full, ff, units, foils, d["mask"], SCALE, cfg
      )[0]
    )
  )(img)
  assert np.isfinite(np.asarray(g)).all()


def test_gradient_matches_float64_reference(data):
  """The gradient w.r.t. the image embeddings against central differences of the
  float64 reference loops (a wrong mask on the text->image columns, a dropped
  foil column or a positive off the diagonal changes it)."""
  d = data
  cfg = C.CSLossConfig(comp_type="negclip")
  lam = {k: getattr(cfg, f"lambda_{k}") for k in C.TERMS}

  def ref_total(img):
    e = dict(d, img=img)
    return (
      lam["full"] * ref_clip(img, d["full"], SCALE, neg=d["ffoil"])
      + lam["comp"] * ref_component(e, "negclip")
      + lam["align"] * ref_align(e, "margin", cfg.align_margin)
      + lam["rank"] * ref_rank(e, cfg.rank_margin, "mean")
    )

  want = np.zeros((B, D))
  eps = 1e-6
  for i in range(B):
    for j in range(D):
      hi, lo = d["img"].copy(), d["img"].copy()
      hi[i, j] += eps
      lo[i, j] -= eps
      want[i, j] = (ref_total(hi) - ref_total(lo)) / (2 * eps)
  rest = f32(d["full"], d["ffoil"], d["units"], d["foils"])
  got = jax.jit(
    jax.grad(
      lambda x: C.cs_clip_loss(x, *rest, d["mask"], SCALE, cfg, validate=False)[
        0
      ]
    )
  )(np.float32(d["img"]))
  np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_sharded_equals_single_device(data):
  d = data
  n = 2
  mesh = jax.make_mesh(
    (n,),
    ("data",),
    axis_types=(jax.sharding.AxisType.Auto,),
    devices=jax.devices()[:n],
  )
  sh = NamedSharding(mesh, P("data"))
  args = f32(d["img"], d["full"], d["ffoil"], d["units"], d["foils"])
  fn = jax.jit(lambda *a: C.cs_clip_loss(*a, SCALE, C.CSLossConfig())[0])
  single = fn(*args, d["mask"])
  sharded = fn(
    *[jax.device_put(x, sh) for x in args], jax.device_put(d["mask"], sh)
  )
  np.testing.assert_allclose(single, sharded, rtol=1e-5)


def test_config_is_validated():
  with pytest.raises(ValueError, match="comp_type"):
    C.CSLossConfig(comp_type="hard")
  with pytest.raises(ValueError, match="lambda_rank"):
    dataclasses.replace(C.CSLossConfig(), lambda_rank=-1.0)
  assert jnp.isfinite(C.CSLossConfig().lambda_full)
