"""Tests that pin the LOCOS score itself, not only the model under it.

1. Three planted heads in one layer separate the detectors:
   * a *reader* attends sharply to the needle but writes nothing toward any
     answer token (its OV output lands on a residual coordinate no token's
     unembedding reads);
   * a *writer* attends uniformly (zero query) and copies name identities
     through its OV;
   * a *bias* head attends uniformly and writes the same logit onto every answer
     token.
   LOCOS must rank the writer first, the attention detectors the reader, DLA the bias head,
   and the per-head L⁺, L⁻, S must equal their closed forms. Each of these mutations of the
   score fails here: L⁺ + L⁻ for L⁺ − L⁻, S = L⁺ (dropping L⁻), and L⁻ without the
   |needle| / (K_t − |needle|) rescaling.
2. A float64 NumPy transcription of the authors' per-step definition, fed by a full forward
   pass (not the KV-cached decode the detector uses), on a random model with a multi-token
   answer.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import lm, locos
from jaxpapers.locos import _toy

READER, WRITER, BIAS = 0, 1, 2
D = 16
# every token's embedding carries 1 here (so every unembedding row reads it)
CONST = 15
# no token's embedding uses this coordinate: writing here moves no logit
SINK = 14
WRITE_GAIN, BIAS_GAIN = 50.0, 100.0


def planted_model():
  vocab = (
    ["<bos>", "<eos>", "?"]
    + [f"f{i}" for i in range(5)]
    + [f"N{i}" for i in range(4)]
  )
  V = len(vocab)
  names = [vocab.index(f"N{i}") for i in range(4)]
  cfg = lm.LMConfig(
    vocab_size=V,
    d_model=D,
    n_layers=1,
    n_heads=3,
    n_kv_heads=3,
    head_dim=D,
    ffn_dim=4,
    # the query/key feature sits in a pair that RoPE barely rotates
    rope_base=1e12,
    eos_ids=(1,),
  )
  p = lm.init_params(jax.random.key(0), cfg)
  emb = np.zeros((V, D), np.float32)
  emb[np.arange(V), np.arange(V)] = 1.0
  emb[:, CONST] = 1.0
  wq = np.zeros((1, D, 3, D), np.float32)
  # the reader's query matches the key feature of names
  wq[0, :, READER, 7] = 5.0
  wk = np.zeros((1, D, 3, D), np.float32)
  wk[0, names, READER, 7] = 1.0
  wv = np.zeros((1, D, 3, D), np.float32)
  wv[0, np.arange(D), READER, np.arange(D)] = 1.0
  # the writer's values carry name identities only
  wv[0, names, WRITER, names] = 1.0
  # the bias head's value is the same for every token
  wv[0, CONST, BIAS, CONST] = 1.0
  wo = np.zeros((1, 3, D, D), np.float32)
  wo[0, READER, :, SINK] = 3.0
  wo[0, WRITER] = WRITE_GAIN * np.eye(D)
  wo[0, BIAS, CONST, CONST] = BIAS_GAIN
  p.update(
    embed=jnp.asarray(emb),
    wq=jnp.asarray(wq),
    wk=jnp.asarray(wk),
    wv=jnp.asarray(wv),
    wo=jnp.asarray(wo),
    w_down=jnp.zeros_like(p["w_down"]),
  )
  return cfg, p, _toy.ToyTokenizer(vocab)


def planted_trials(tok, num=4, fillers=9):
  rng = np.random.default_rng(1)
  trials = []
  for i in range(num):
    fill = [f"f{j}" for j in rng.integers(0, 5, fillers)]
    pos = 1 + i % fillers
    name = f"N{i % 4}"
    words = ["<bos>"] + fill[:pos] + [name] + fill[pos:] + ["?"]
    trials.append(
      locos.Trial(tok.encode(" ".join(words)), (1 + pos, 2 + pos), name)
    )
  return trials


@pytest.fixture(scope="module")
def planted():
  cfg, params, tok = planted_model()
  trials = planted_trials(tok)
  scores, per = locos.detect_heads(
    params, cfg, trials, tok, max_steps=1, stop_ids=(1,), batch_size=len(trials)
  )
  return cfg, params, tok, trials, scores, per


def test_planted_heads_separate_locos_from_attention_detectors(planted):
  _, _, _, trials, scores, per = planted
  assert all(t.accepted and t.answer_steps == [0] for t in per), [
    t.generation for t in per
  ]
  assert [t.generation for t in per] == [t.answer for t in trials]
  top = {name: locos.rank_heads(s)[0] for name, s in scores.items()}
  assert top["locos"] == (0, WRITER), scores["locos"]
  for name in ("wu", "contrastive", "attention_spatial"):
    assert top[name] == (0, READER), (name, scores[name])
  # DLA without the spatial contrast
  assert top["dla"] == (0, BIAS), scores["dla"]
  assert scores["wu"][0, READER] == 1.0 and scores["wu"][0, WRITER] == 0.0
  # the reader writes nothing toward the answer: LOCOS and DLA are exactly zero
  assert scores["locos"][0, READER] == 0.0 and scores["dla"][0, READER] == 0.0


def test_score_batch_reads_the_trials_rows_and_skips_padding_rows(planted):
  """One generation of the trials plus a padding row (a copy of the first
  trial's prompt, as `detect_heads` pads a short batch), scored by
  `score_batch`, gives `detect_heads`' per-trial scores."""
  cfg, params, tok, trials, _, per = planted
  rows = [t.prompt_ids for t in trials] + [trials[0].prompt_ids]
  ids, mask = lm.left_pad(rows, length=max(map(len, rows)))
  g = lm.generate(
    params,
    ids,
    config=cfg,
    prompt_mask=mask,
    max_new_tokens=1,
    stop_ids=(1,),
    capture_attn=True,
    capture_values=True,
  )
  got = locos.score_batch(g, trials, params=params, config=cfg, tokenizer=tok)
  assert len(got) == len(trials)
  for a, b in zip(got, per, strict=True):
    assert (a.accepted, a.generation, a.answer_steps) == (
      b.accepted,
      b.generation,
      b.answer_steps,
    )
    for name in b.detectors:
      np.testing.assert_allclose(
        a.detectors[name], b.detectors[name], rtol=1e-6, atol=1e-7
      )


def test_planted_heads_match_the_closed_form(planted):
  """L⁺, L⁻ and S per head from first principles (float64).

  Every token's normalised input is (one-hot + const) / rms with rms =
  sqrt(2/d + eps), so a value coordinate is r = 1/sqrt(2/d + eps). With K keys,
  uniform attention 1/K and a one-token needle:
    writer: c_needle = r · WRITE_GAIN, other c_j = 0 -> L⁺ = c/K, L⁻ = 0;
    bias:   c_j = r · BIAS_GAIN for every j        -> L⁺ = c/K, L⁻ = (K−1)c/K · 1/(K−1) = c/K.
  """
  cfg, _, _, trials, _, per = planted
  r = 1.0 / np.sqrt(2.0 / D + cfg.norm_eps)
  for trial, ts in zip(trials, per):
    K = len(trial.prompt_ids)
    c_w, c_b = r * WRITE_GAIN, r * BIAS_GAIN
    np.testing.assert_allclose(ts.L_plus[0, WRITER], c_w / K, rtol=1e-5)
    np.testing.assert_allclose(ts.L_minus[0, WRITER], 0.0, atol=1e-6)
    np.testing.assert_allclose(ts.L_plus[0, BIAS], c_b / K, rtol=1e-5)
    # the off-needle rescaling |needle| / (K − |needle|) makes L⁻ equal L⁺ here
    np.testing.assert_allclose(ts.L_minus[0, BIAS], c_b / K, rtol=1e-5)
    np.testing.assert_allclose(
      ts.S, ts.L_plus - ts.L_minus, rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
      ts.S[0], [0.0, c_w / K, 0.0], atol=1e-4 * c_w / K, rtol=1e-5
    )
    np.testing.assert_allclose(ts.detectors["locos"], ts.S)
    np.testing.assert_allclose(ts.detectors["dla"][0, BIAS], c_b, rtol=1e-5)
    np.testing.assert_allclose(
      ts.detectors["attention_spatial"][0, WRITER], 0.0, atol=1e-6
    )


def test_ablating_the_locos_head_breaks_retrieval_and_the_attention_pick_does_not(
  planted,
):
  cfg, params, tok, trials, scores, _ = planted
  curve = locos.ablation_curve(
    params,
    cfg,
    trials,
    {d: scores[d] for d in ("locos", "wu", "dla")},
    [1],
    tokenizer=tok,
    mode="zero_out",
    metric="exact",
    num_random=1,
    max_new_tokens=1,
    stop_ids=(1,),
    batch_size=len(trials),
    num_resamples=10,
  )
  assert curve["baseline"]["mean"] == 1.0
  assert curve["locos"]["mean"] == [0.0]  # the writer carries the answer
  assert curve["wu"]["mean"] == [1.0] and curve["dla"]["mean"] == [1.0]


# -------------------------------------------------------------------- reference


def _reference_locos(
  attn_rows, values, wo, w_u, gen_ids, steps, span, prompt_len, group
):
  """Float64 transcription of the per-step LOCOS definition (spec §3.1).

  attn_rows[t]: [L, H, K_t] last-row attention at step t over the K_t =
  prompt_len + t keys; values: [L, KV, T, dh] values of every position; wo:
  [L, H, dh, d]; w_u: [V, d].
  """
  s, e = span
  L, H = wo.shape[:2]
  lp = np.zeros((L, H))
  lm_ = np.zeros((L, H))
  for t in steps:
    u = w_u[gen_ids[t]]
    K = prompt_len + t
    n = e - s
    for layer in range(L):
      for h in range(H):
        u_hat = wo[layer, h] @ u
        c = values[layer, h // group, :K] @ u_hat
        phi = attn_rows[t][layer, h, :K] * c
        plus = phi[s:e].sum()
        minus = (phi[:s].sum() + phi[e:K].sum()) * n / (K - n)
        lp[layer, h] += plus
        lm_[layer, h] += minus
  lp /= len(steps)
  lm_ /= len(steps)
  return lp, lm_, lp - lm_


def test_detector_equals_float64_reference_from_a_full_forward():
  # the same tiny model, prompt and decode length as test_scores (compiled
  # programs are shared)
  cfg = lm.LMConfig(
    vocab_size=37,
    d_model=32,
    n_layers=2,
    n_heads=4,
    n_kv_heads=2,
    head_dim=8,
    ffn_dim=48,
    rope_base=100.0,
  )
  params = lm.init_params(jax.random.key(0), cfg, std=0.3)
  tok = _toy.ToyTokenizer([f"t{i}" for i in range(cfg.vocab_size)])
  prompt = np.array([3, 17, 5, 22, 8, 1, 29, 11, 7, 30])
  n_gen = 3
  g = lm.greedy_generate(params, prompt, config=cfg, max_new_tokens=n_gen)
  gen = [int(i) for i in np.asarray(g.tokens[0])]
  trial = locos.Trial(prompt, (4, 7), tok.decode(gen[1:3]))
  ts = locos.locos_trial(params, cfg, trial, tok, max_steps=n_gen, stop_ids=())
  assert ts.answer_steps == [1, 2]
  # full (uncached) forward over prompt + generated tokens; query row P-1+t
  # produced token t
  seq = np.concatenate([prompt, gen])
  _, _, cap = lm.forward(
    params, seq[None], config=cfg, capture=lm.Capture(attn=("all"), values=True)
  )
  attn = np.asarray(cap["attn"][0], np.float64)  # [L, H, T, T]
  P = len(prompt)
  rows = {t: attn[:, :, P - 1 + t, :] for t in range(n_gen)}
  lp, lmn, s = _reference_locos(
    rows,
    np.asarray(cap["values"][0], np.float64),
    np.asarray(params["wo"], np.float64),
    np.asarray(params["embed"], np.float64),
    gen,
    [1, 2],
    (4, 7),
    P,
    cfg.group_size,
  )
  assert np.abs(lmn).max() > 1e-2 * np.abs(lp).max()  # L⁻ matters here
  np.testing.assert_allclose(ts.L_plus, lp, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(ts.L_minus, lmn, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(ts.S, s, rtol=1e-4, atol=1e-5)
