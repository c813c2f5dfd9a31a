"""Fingerprint prediction vs. retrieval objectives for tandem mass spectra.

"Small molecule retrieval from tandem mass spectrometry: what are we optimizing
for?" (De Waele, Wydmuch, Dembczyński, Kotłowski, Waegeman; arXiv:2602.16507),
reference code gdewael/ms-mole. The fingerprint and contrastive losses and the
metrics of the reference, bit-packed Tanimoto, the exact decision-theoretic view
on small fingerprints (Bayes fingerprints by enumeration and their HR@1 regret),
the spectrum encoder, and offline data: molecules shipped with RDKit (extra
``chem``), Morgan fingerprints, simulated spectra (a labelled proxy for MS/MS),
candidate pools, and a reader for the MassSpecGym file layout.
"""

from jaxpapers.msretrieval._benchmark import (
  POOL_MODES,
  nearest_neighbour_fingerprints,
  pool_summary,
  pool_ties,
  shuffled_labels,
  simulated_benchmark,
)
from jaxpapers.msretrieval._data import (
  CandidateSet,
  bin_spectra,
  build_candidates,
  load_bundled_molecules,
  monoisotopic_masses,
  morgan_fingerprints,
  read_candidates,
  read_massspecgym,
  simulate_spectra,
)
from jaxpapers.msretrieval._losses import (
  bce_loss,
  combined_loss,
  cosine_loss,
  focal_loss,
  listwise_contrastive_loss,
  pairwise_contrastive_loss,
  soft_iou_loss,
)
from jaxpapers.msretrieval._metrics import (
  bit_f1,
  fingerprint_metrics,
  hit_rate_at_k,
  pareto_front,
)
from jaxpapers.msretrieval._model import (
  BASE_LOSSES,
  LOSSES,
  FingerprintMLP,
  loss_weights,
  make_optimizer,
  retrieval_metrics,
  weighted_loss,
)
from jaxpapers.msretrieval._similarity import (
  SIMILARITIES,
  candidate_scores,
  continuous_tanimoto,
  cosine_similarity,
  pack_bits,
  packed_tanimoto,
  tanimoto,
  thresholded_tanimoto,
)
from jaxpapers.msretrieval._theory import (
  enumerate_bayes_fingerprint,
  hr1_regret,
  marginal_fingerprint,
  merge_duplicate_candidates,
  similarity_band,
)
from jaxpapers.msretrieval._toy import (
  lemma_check,
  toy_regret_problems,
  toy_regret_summary,
)

__all__ = [
  "BASE_LOSSES",
  "LOSSES",
  "POOL_MODES",
  "SIMILARITIES",
  "CandidateSet",
  "FingerprintMLP",
  "bce_loss",
  "bin_spectra",
  "bit_f1",
  "build_candidates",
  "candidate_scores",
  "combined_loss",
  "continuous_tanimoto",
  "cosine_loss",
  "cosine_similarity",
  "enumerate_bayes_fingerprint",
  "fingerprint_metrics",
  "focal_loss",
  "hit_rate_at_k",
  "hr1_regret",
  "lemma_check",
  "listwise_contrastive_loss",
  "load_bundled_molecules",
  "loss_weights",
  "make_optimizer",
  "marginal_fingerprint",
  "merge_duplicate_candidates",
  "monoisotopic_masses",
  "morgan_fingerprints",
  "nearest_neighbour_fingerprints",
  "pack_bits",
  "packed_tanimoto",
  "pairwise_contrastive_loss",
  "pareto_front",
  "pool_summary",
  "pool_ties",
  "read_candidates",
  "read_massspecgym",
  "retrieval_metrics",
  "shuffled_labels",
  "similarity_band",
  "simulate_spectra",
  "simulated_benchmark",
  "soft_iou_loss",
  "tanimoto",
  "thresholded_tanimoto",
  "toy_regret_problems",
  "toy_regret_summary",
  "weighted_loss",
]
