"""Bad-input battery for ``jaxpapers.msretrieval``: malformed calls, eagerly and
under jit."""

import jax
import numpy as np
from flax import nnx

import jaxpapers.msretrieval as M
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

_rng = np.random.default_rng(0)
FP = (_rng.random((3, 8)) < 0.5).astype(np.uint8)
BAD_FP = FP.astype(np.float32)
BAD_FP[0, 0] = 0.5
P = _rng.random((3, 8)).astype(np.float32)
BAD_P = P.copy()
BAD_P[1, 1] = 1.5
Z = _rng.normal(size=(3, 8)).astype(np.float32)
CAND = (_rng.random((3, 4, 8)) < 0.5).astype(np.uint8)
BAD_CAND = CAND.astype(np.float32)
BAD_CAND[0, 0, 0] = 2.0
MASK = np.ones((3, 4), bool)
LAB = np.zeros((3, 4), bool)
LAB[:, 0] = True
S = _rng.random((3, 4)).astype(np.float32)
S_NAN = S.copy()
S_NAN[0, 1] = np.nan
PI = np.array([0.5, 0.5], np.float32)
C2 = np.array([[1, 0, 1], [0, 1, 1]], np.uint8)
BINARY = "must be binary"
HOST = "host-side (numpy / RDKit / files)"
STATIC = "static configuration, checked before any tracing"


def _all_ones_words(out):
  assert np.all(np.asarray(out) == 0xFFFFFFFF)


CASES = [
  Case(
    "tanimoto", M.tanimoto, (BAD_FP, FP), match="a must be binary", jit=("nan")
  ),
  Case(
    "tanimoto", M.tanimoto, (FP, FP[:, :4]), match="same F", id=("tanimoto-F")
  ),
  Case(
    "thresholded_tanimoto",
    M.thresholded_tanimoto,
    (P, FP),
    {"threshold": float("nan")},
    match="threshold must be a finite",
  ),
  Case(
    "pack_bits",
    M.pack_bits,
    (BAD_FP,),
    match=BINARY,
    jit="nan",
    jit_check=_all_ones_words,
  ),
  Case(
    "packed_tanimoto",
    M.packed_tanimoto,
    (P, P),
    error=TypeError,
    match=("a_words must be"),
  ),
  Case(
    "continuous_tanimoto",
    M.continuous_tanimoto,
    (BAD_P, P),
    match=r"p must have entries in \[0, 1\]",
    jit="nan",
  ),
  Case("cosine_similarity", M.cosine_similarity, (P, P[:, :3]), match="same F"),
  Case(
    "candidate_scores",
    M.candidate_scores,
    (BAD_P, CAND, MASK),
    match="pred must be probabilities",
    jit="nan",
  ),
  Case(
    "candidate_scores",
    M.candidate_scores,
    (P, BAD_CAND, MASK),
    match="cand_fp must be binary",
    jit="nan",
    id="candidate_scores-cand",
  ),
  Case(
    "candidate_scores",
    M.candidate_scores,
    (P, CAND, MASK[:, :2]),
    match="cand_mask must have shape",
    id="candidate_scores-mask",
  ),
  Case(
    "candidate_scores",
    M.candidate_scores,
    (P, CAND, MASK),
    {"sim": "dice"},
    match="sim must be one of",
    id="candidate_scores-sim",
  ),
  Case(
    "bce_loss", M.bce_loss, (Z, BAD_FP), match="fp must be binary", jit=("nan")
  ),
  Case(
    "focal_loss",
    M.focal_loss,
    (Z, FP),
    {"gamma": -1.0},
    match=("gamma must be >= 0"),
  ),
  Case("cosine_loss", M.cosine_loss, (Z, FP[:2]), match="fp must have shape"),
  Case(
    "soft_iou_loss",
    M.soft_iou_loss,
    (FP, FP),
    error=TypeError,
    match="logits must have a floating dtype",
  ),
  Case(
    "listwise_contrastive_loss",
    M.listwise_contrastive_loss,
    (S_NAN, LAB, MASK),
    match="scores must not contain NaN",
    jit="nan",
  ),
  Case(
    "pairwise_contrastive_loss",
    M.pairwise_contrastive_loss,
    (S, LAB, MASK),
    {"temperature": 0.0},
    match="temperature must be > 0",
  ),
  Case(
    "combined_loss",
    M.combined_loss,
    (Z, FP, CAND, LAB, MASK),
    {"weight": 2.0},
    match="weight must be <= 1",
  ),
  Case(
    "hit_rate_at_k",
    M.hit_rate_at_k,
    (S, LAB, MASK, 0),
    {"ties": "optimistic"},
    match="k must be >= 1",
  ),
  Case(
    "hit_rate_at_k",
    M.hit_rate_at_k,
    (S_NAN, LAB, MASK, 1),
    {"ties": "optimistic"},
    match="must not contain NaN",
    jit="nan",
    id="hit_rate_at_k-nan",
  ),
  Case(
    "hit_rate_at_k",
    M.hit_rate_at_k,
    (S, LAB, MASK, 1),
    match="key is required",
    id="hit_rate_at_k-key",
  ),
  Case("bit_f1", M.bit_f1, (FP, BAD_FP), match="fp must be binary", jit="nan"),
  Case(
    "fingerprint_metrics",
    M.fingerprint_metrics,
    (BAD_P, FP),
    match="probs must be probabilities",
    jit="nan",
  ),
  Case(
    "pareto_front",
    M.pareto_front,
    (np.zeros((3, 3)),),
    match=r"shape \[N, 2\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "enumerate_bayes_fingerprint",
    M.enumerate_bayes_fingerprint,
    (np.ones(2, np.float32) / 2, np.zeros((2, 21), np.uint8)),
    match="F <= 20",
  ),
  Case(
    "enumerate_bayes_fingerprint",
    M.enumerate_bayes_fingerprint,
    (PI * 3, C2),
    match="sum to 1",
    jit="nan",
    id="enumerate-posterior",
  ),
  Case(
    "marginal_fingerprint",
    M.marginal_fingerprint,
    (PI, C2 * 2),
    match="cands must be binary",
    jit="nan",
  ),
  Case(
    "hr1_regret",
    M.hr1_regret,
    (PI, C2, C2[0]),
    {"sim": "dice"},
    match=("sim must be"),
  ),
  Case(
    "hr1_regret",
    M.hr1_regret,
    (PI, C2, C2[0] * 0.5),
    match="decision must be binary",
    jit="nan",
    id="hr1_regret-decision",
  ),
  Case(
    "hr1_regret",
    lambda pi, c, d, m: M.hr1_regret(pi, c, d, mask=m),
    (PI, C2, C2[0], np.zeros(2, bool)),
    match="mask must keep at least one candidate",
    jit="nan",
    id="hr1_regret-empty-mask",
  ),
  Case(
    "hr1_regret",
    lambda pi, c, d: M.hr1_regret(pi, c, d, mask=np.ones(3, bool)),
    (PI, C2, C2[0]),
    match=r"mask must have shape \(2,\)",
    id="hr1_regret-mask-shape",
  ),
  Case(
    "merge_duplicate_candidates",
    M.merge_duplicate_candidates,
    (PI, C2 * 2),
    match="cands must be binary",
    jit="nan",
  ),
  Case(
    "merge_duplicate_candidates",
    M.merge_duplicate_candidates,
    (PI, C2[:, :, None]),
    match=r"cands must have rank 2",
    id="merge_duplicate_candidates-shape",
  ),
  Case(
    "merge_duplicate_candidates",
    M.merge_duplicate_candidates,
    (PI * 3, C2),
    match="posterior must be non-negative and sum to 1",
    jit="nan",
    id="merge_duplicate_candidates-posterior",
  ),
  Case(
    "similarity_band",
    M.similarity_band,
    (C2 * 3,),
    match=("cands must be binary"),
    jit=("nan"),
  ),
  Case(
    "FingerprintMLP",
    lambda: M.FingerprintMLP(0, 8, rngs=nnx.Rngs(0)),
    match="n_in must be >= 1",
    jit=None,
    jit_reason=STATIC,
  ),
  Case(
    "loss_weights",
    M.loss_weights,
    ("hinge",),
    match="name must be one of",
    jit=None,
    jit_reason=STATIC,
  ),
  Case(
    "make_optimizer",
    M.make_optimizer,
    (0.0,),
    match="lr must be > 0",
    jit=None,
    jit_reason=STATIC,
  ),
  Case(
    "weighted_loss",
    M.weighted_loss,
    (Z, FP, CAND, LAB, MASK, np.ones(3, np.float32)),
    match=r"weights must have shape \(6,\)",
  ),
  Case(
    "retrieval_metrics",
    M.retrieval_metrics,
    (P, FP, CAND, LAB, MASK),
    {"key": jax.random.key(0), "sims": ("dice",)},
    match="sims must be drawn from",
  ),
  *(
    Case(
      name,
      fn,
      args,
      kwargs,
      error=err,
      match=match,
      jit=None,
      jit_reason=HOST,
      id=cid or "",
    )
    for name, fn, args, kwargs, err, match, cid in (
      (
        "toy_regret_problems",
        M.toy_regret_problems,
        ((24,), (4,), (0.1,)),
        {"problems": 2, "density": 0.3, "seed": 0},
        ValueError,
        r"bits must be .*\[1, 20\]",
        None,
      ),
      (
        "toy_regret_problems",
        M.toy_regret_problems,
        ((6,), (4,), (1.5,)),
        {"problems": 2, "density": 0.3, "seed": 0},
        ValueError,
        r"flips must be .*\[0, 1\]",
        "toy_regret_problems-flips",
      ),
      (
        "toy_regret_summary",
        M.toy_regret_summary,
        ([],),
        {},
        ValueError,
        "rows must be",
        None,
      ),
      (
        "lemma_check",
        M.lemma_check,
        (np.zeros((3, 4)), np.zeros(2)),
        {},
        ValueError,
        r"jac must be \[P, n\] and smax \[P\]",
        None,
      ),
      (
        "pool_ties",
        M.pool_ties,
        (FP, np.zeros((3, 4), int), np.zeros(2, int)),
        {},
        ValueError,
        r"query \[Q\]",
        None,
      ),
      (
        "shuffled_labels",
        M.shuffled_labels,
        (LAB, 0, 0),
        {},
        ValueError,
        "num_shuffles must be an int >= 1",
        None,
      ),
      (
        "nearest_neighbour_fingerprints",
        M.nearest_neighbour_fingerprints,
        (P, P, FP, 4),
        {},
        ValueError,
        r"k must be an int in \[1, 3\]",
        None,
      ),
      (
        "pool_summary",
        M.pool_summary,
        ({"fps": FP},),
        {},
        KeyError,
        "data lacks",
        None,
      ),
      (
        "simulated_benchmark",
        M.simulated_benchmark,
        (),
        dict(
          n_molecules=10,
          n_bits=64,
          radius=2,
          n_bins=50,
          max_mz=500.0,
          test_fraction=1.5,
          max_test_queries=5,
          train_pool="mass",
          train_cands=4,
          eval_cands=4,
          seed=0,
        ),
        ValueError,
        r"test_fraction must be in \(0, 1\)",
        None,
      ),
    )
  ),
  Case(
    "load_bundled_molecules",
    M.load_bundled_molecules,
    (0,),
    match="max_n must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "morgan_fingerprints",
    M.morgan_fingerprints,
    (["CCO", "not a smiles"],),
    match=r"smiles\[1\] is not a valid SMILES",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "monoisotopic_masses",
    M.monoisotopic_masses,
    ("CCO",),
    error=TypeError,
    match="sequence of SMILES",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "simulate_spectra",
    M.simulate_spectra,
    (["CCO"],),
    {"seed": 0, "noise_peaks": (5, 2)},
    match="lo <= hi",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bin_spectra",
    M.bin_spectra,
    ([[1.0, 2.0]], [[1.0]]),
    match="spectrum 0: 2 m/z values but 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_candidates",
    M.build_candidates,
    (FP, np.ones(3), np.array([0])),
    {"mode": "formula", "size": 2, "seed": 0},
    match="mode must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_candidates",
    M.build_candidates,
    (np.zeros((3, 8), np.uint8), np.ones(3), np.array([0])),
    {"mode": "mass", "size": 2, "seed": 0, "unique_fingerprints": True},
    match="number of distinct fingerprints",
    jit=None,
    jit_reason=HOST,
    id="build_candidates-unique",
  ),
  Case(
    "read_massspecgym",
    M.read_massspecgym,
    ("/nonexistent-dir",),
    error=FileNotFoundError,
    match="MassSpecGym.tsv not found",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "read_candidates",
    M.read_candidates,
    (3,),
    error=TypeError,
    match="path must be a path",
    jit=None,
    jit_reason=HOST,
  ),
]

EXEMPT = {"CandidateSet": "a NamedTuple result container"}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(M, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_empty_fingerprints_have_similarity_zero():
  z = np.zeros((2, 5), np.uint8)
  assert np.all(np.asarray(M.tanimoto(z, z)) == 0)
  assert np.all(
    np.asarray(M.packed_tanimoto(M.pack_bits(z), M.pack_bits(z))) == 0
  )
  assert np.all(np.asarray(M.continuous_tanimoto(z, z)) == 0)
  s = M.candidate_scores(
    np.zeros((1, 5), np.float32), z[None], np.ones((1, 2), bool), sim="tanimoto"
  )
  assert np.all(np.asarray(s) == 0)
