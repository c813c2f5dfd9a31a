"""Per-row head sets: one batched pass equals the per-probe, per-head-set path.

`locos.generate_texts` with a per-probe ablation mask [N, L, H] (and the
experiment's grouped cells, which concatenate several conditions into one pass)
must give exactly the generations of one call per probe with that probe's [L, H]
mask: rows never interact, padding rows are dropped, and the order of probes is
kept across length buckets.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.locos import evaluate, real
from jaxpapers import core, lm, locos
from jaxpapers.locos import _toy

TASK = _toy.ToyTask(
  num_names=6, num_landmarks=6, num_fillers=6, prompt_len=14, max_needles=1
)


@pytest.fixture(scope="module")
def model():
  tok = TASK.tokenizer()
  cfg = lm.LMConfig(
    vocab_size=len(TASK.vocab),
    d_model=32,
    n_layers=3,
    n_heads=4,
    n_kv_heads=2,
    head_dim=8,
    ffn_dim=32,
    rope_base=1000.0,
    eos_ids=(tok.eos_id,),
  )
  params = lm.init_params(jax.random.key(3), cfg, std=0.3)
  trials = _toy.make_toy_trials(
    TASK, np.random.default_rng(0), 11, "nonliteral"
  )
  # varied prompt lengths, so the probes fall into several buckets
  trials = [
    dataclasses.replace(t, prompt_ids=t.prompt_ids[i % 5 :])
    for i, t in enumerate(trials)
  ]
  mean = jax.random.normal(jax.random.key(4), (3, 4, 8))
  return cfg, params, tok, trials, mean


def _gen(model, probes, mask, batch_size):
  cfg, params, tok, _, mean = model
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean, mode="mean_q")
  return locos.generate_texts(
    params,
    cfg,
    probes,
    tok,
    ablation=abl,
    max_new_tokens=4,
    batch_size=batch_size,
    stop_ids=[],
    pad_to=(12, 14),
  )


def test_per_row_masks_equal_per_probe_calls(model):
  cfg, params, tok, trials, mean = model
  rng = np.random.default_rng(1)
  masks = rng.random((len(trials), 3, 4)) < 0.4
  batched = _gen(model, trials, masks, batch_size=8)
  single = [_gen(model, [t], m, batch_size=1)[0] for t, m in zip(trials, masks)]
  assert batched == single
  gen = dict(
    max_new_tokens=4, batch_size=8, stop_ids=[], pad_to=(12, 14), seed_block=3
  )
  assert (
    locos.ablated_texts(params, cfg, trials, tok, masks, mean, **gen) == batched
  )


def test_per_row_forward_equals_rowwise_forward(model):
  cfg, params, _, trials, mean = model
  ids, m = lm.left_pad([t.prompt_ids for t in trials[:4]], length=14)
  masks = np.random.default_rng(2).random((4, 3, 4)) < 0.5
  abl = lm.HeadAblation(mask=jnp.asarray(masks), mean=mean, mode="mean_q")
  got = lm.forward(params, ids, config=cfg, mask=m, ablation=abl)[0]
  for b in range(4):
    one = lm.HeadAblation(mask=jnp.asarray(masks[b]), mean=mean, mode="mean_q")
    want = lm.forward(
      params, ids[b : b + 1], config=cfg, mask=m[b : b + 1], ablation=one
    )[0]
    np.testing.assert_allclose(
      np.asarray(got[b]), np.asarray(want[0]), atol=1e-5, rtol=1e-5
    )
  # the head sets matter: every row differs from the unablated forward
  plain = np.asarray(lm.forward(params, ids, config=cfg, mask=m)[0])
  assert all(
    np.abs(plain[b] - np.asarray(got[b])).max() > 1e-3 for b in range(4)
  )


def test_per_row_mask_bad_batch(model):
  cfg, params, tok, trials, mean = model
  abl = lm.HeadAblation(
    mask=jnp.zeros((3, 3, 4), bool), mean=mean, mode=("mean_q")
  )
  ids, m = lm.left_pad([t.prompt_ids for t in trials[:2]], length=14)
  with pytest.raises(ValueError, match="ablation.mask"):
    lm.forward(params, ids, config=cfg, mask=m, ablation=abl)
  with pytest.raises(ValueError, match="ablation.mask"):
    locos.generate_texts(
      params, cfg, trials[:2], tok, ablation=abl, max_new_tokens=2
    )


@pytest.mark.slow
def test_grouped_cells_equal_cell_by_cell(model, tmp_path):
  cfg, params, tok, trials, mean = model
  L, H = cfg.n_layers, cfg.n_heads
  scores = np.arange(L * H, dtype=float).reshape(L, H)
  conds = locos.ablation_conditions(
    {"locos": scores}, ("locos",), [1, 5], L, H, 2, jax.random.key(0)
  )
  gen = dict(
    max_new_tokens=4, stop_ids=[], batch_size=2, seed_block=2, pad_to=(12, 14)
  )
  only = np.array([0, 2, 3, 5, 8, 9, 10])
  out = {}
  for name, group_rows, batch in (("cells", None, 2), ("grouped", 40, 8)):
    store = core.CellStore(tmp_path / name)
    g = dict(gen, batch_size=batch)
    locos.ablation_cells(
      params,
      cfg,
      trials,
      tok,
      conds,
      mean,
      store,
      "t",
      g,
      only=only,
      group_rows=group_rows,
    )
    out[name] = {
      c: core.CellStore(tmp_path / name)[c]
      for c in core.CellStore(tmp_path / name)._cells
    }
  assert len(out["cells"]) == 5 and out["cells"] == out["grouped"]


def test_ablation_num_eval_keeps_the_answered_probes_among_the_first_n():
  answers = ["Ann", "Bob", "Cy", "Dee", "Eve", "Fay"]
  # answered: 0, 2, 4, 5
  texts = [" Ann.", " no", " Cy", " Bob", " Eve is", " Fay"]
  np.testing.assert_array_equal(
    evaluate.ablated_probes(answers, texts, 0), [0, 2, 4, 5]
  )
  np.testing.assert_array_equal(
    evaluate.ablated_probes(answers, texts, 4), [0, 2]
  )
  np.testing.assert_array_equal(
    evaluate.ablated_probes(answers, texts, 5), [0, 2, 4]
  )
  np.testing.assert_array_equal(
    evaluate.ablated_probes(answers, texts, 6), [0, 2, 4, 5]
  )
  assert (
    real.stem_tag(6, 4) == "stem/n=6/first=4" and real.stem_tag(6) == "stem/n=6"
  )
  with pytest.raises(ValueError, match="ablation_num_eval"):
    evaluate.ablated_probes(answers, texts, 7)
  with pytest.raises(ValueError, match="texts"):
    evaluate.ablated_probes(answers, texts[:5], 3)


def test_ablation_cells_hold_only_the_first_n_answered_probes(model, tmp_path):
  cfg, params, tok, trials, mean = model
  L, H = cfg.n_layers, cfg.n_heads
  conds = locos.ablation_conditions(
    {"locos": np.eye(L, H)}, ("locos",), [1], L, H, 2, jax.random.key(0)
  )
  gen = dict(
    max_new_tokens=2, stop_ids=[], batch_size=8, seed_block=2, pad_to=(12, 14)
  )
  store = core.CellStore(tmp_path)
  # the "unablated generations": every probe answered except 1 and 4
  texts = [t.answer if i not in (1, 4) else "" for i, t in enumerate(trials)]
  only = evaluate.ablated_probes([t.answer for t in trials], texts, 6)
  np.testing.assert_array_equal(only, [0, 2, 3, 5])
  res = locos.ablation_cells(
    params,
    cfg,
    trials,
    tok,
    conds[1:],
    mean,
    store,
    real.stem_tag(11, 6),
    gen,
    only=only,
  )
  store = core.CellStore(tmp_path)  # as written to disk
  assert set(store._cells) == {
    "stem/n=11/first=6/locos/k=1",
    "stem/n=11/first=6/random/k=1",
  }
  for cell in store._cells:
    assert len(store[cell]) == 4
  scores = res[("locos", 1)]
  assert (
    np.isfinite(scores[only]).all() and np.isnan(np.delete(scores, only)).all()
  )
