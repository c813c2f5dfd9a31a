"""Host-side data: bundled molecules, Morgan fingerprints, simulated spectra,
candidate pools, and a reader for the MassSpecGym file layout. Numpy only; never
called inside jit.

Molecules come from files that ship with the ``rdkit`` wheel (optional extra
``chem``, imported lazily): the first 5,000 NCI compounds, the WEHI PAINS test
set and a ChEMBL series, deduplicated by the first InChIKey block (no shared
skeleton between splits).

**Simulated spectra are a proxy for MS/MS, not measurements** (a project choice:
MassSpecGym is not available offline). Each spectrum holds the protonated
precursor ``[M+H]+``, the ``[M+H]+`` ions of both sides of every cleavable
acyclic single bond between heavy atoms, two neutral losses (H2O, NH3),
log-normal intensities, 20% peak dropout, 5-15 uniform noise peaks and
``N(0, 0.01 Da)`` m/z jitter; binned at ``max_mz / n_bins`` Da and
max-normalised.
"""

from __future__ import annotations

import csv
import json
import os
import pathlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.core.data import resolve_inside

PROTON = 1.007276
_MODES = ("mass", "hard", "random")
_FILES = (
  ("Data", "NCI/first_5K.smi", "smi"),
  ("Data", "Pains/test_data/wehi_mols.csv", "csv"),
  ("Contrib", "FreeWilson/data/CHEMBL2321810.smi", "smi"),
)


def _rdkit():
  try:
    import rdkit  # noqa: F401
    from rdkit import Chem
    from rdkit.rdBase import DisableLog

    DisableLog("rdApp.*")
    return Chem
  except (
    ImportError
  ) as e:  # pragma: no cover - exercised through a monkeypatched import
    raise ImportError(
      "jaxpapers.msretrieval's molecule functions need RDKit: "
      "pip install 'jaxpapers[chem]'"
    ) from e


def _bundled_smiles() -> list[str]:
  _rdkit()
  from rdkit import RDConfig

  out = []
  for root, rel, kind in _FILES:
    base = RDConfig.RDDataDir if root == "Data" else RDConfig.RDContribDir
    path = os.path.join(base, rel)
    if not os.path.exists(path):
      continue
    with open(path, encoding="utf-8", errors="replace") as f:
      if kind == "csv":
        out += [row[0] for row in csv.reader(f) if row]
      else:
        out += [line.split()[0] for line in f if line.strip()]
  return out


def load_bundled_molecules(
  max_n: int | None = None,
  *,
  min_heavy_atoms: int = 5,
  max_mass: float = 1000.0,
) -> list[str]:
  """Canonical SMILES of the molecules shipped with RDKit, unique by InChIKey
  block 1.

  The largest fragment of each record is kept (salts removed); molecules with
  fewer than ``min_heavy_atoms`` heavy atoms or a monoisotopic mass above
  ``max_mass`` are dropped. The order is the files' order, so ``max_n`` takes a
  deterministic prefix.

  Args:
    max_n: keep at most this many molecules (None: all, about 15k).
    min_heavy_atoms: minimum heavy-atom count.
    max_mass: maximum monoisotopic mass (Da).

  Returns:
    A list of canonical SMILES.

  Raises:
    ImportError: naming the ``chem`` extra when RDKit is missing.
  """
  if max_n is not None:
    max_n = V.check_int(max_n, "max_n", min_value=1)
  min_heavy_atoms = V.check_int(min_heavy_atoms, "min_heavy_atoms", min_value=1)
  max_mass = V.check_float(
    max_mass, "max_mass", min_value=0.0, min_inclusive=False
  )
  Chem = _rdkit()
  from rdkit.Chem.rdMolDescriptors import CalcExactMolWt as ExactMolWt

  seen, out = set(), []
  for smi in _bundled_smiles():
    mol = Chem.MolFromSmiles(smi)
    if mol is None:
      continue
    frags = Chem.GetMolFrags(mol, asMols=True)
    mol = max(frags, key=lambda m: m.GetNumHeavyAtoms())
    if mol.GetNumHeavyAtoms() < min_heavy_atoms or ExactMolWt(mol) > max_mass:
      continue
    key = Chem.MolToInchiKey(mol)
    if not key:
      continue
    block = key.split("-")[0]
    if block in seen:
      continue
    seen.add(block)
    out.append(Chem.MolToSmiles(mol))
    if max_n is not None and len(out) >= max_n:
      break
  return out


def _mols(smiles: Sequence[str], name: str = "smiles"):
  if isinstance(smiles, str) or not isinstance(smiles, Sequence):
    raise TypeError(
      f"{name} must be a sequence of SMILES strings, "
      f"got {type(smiles).__name__}"
    )
  Chem = _rdkit()
  mols = []
  for i, s in enumerate(smiles):
    m = Chem.MolFromSmiles(s) if isinstance(s, str) else None
    if m is None:
      raise ValueError(f"{name}[{i}] is not a valid SMILES: {s!r}")
    mols.append(m)
  return mols


def morgan_fingerprints(
  smiles: Sequence[str], *, n_bits: int = 2048, radius: int = 2
) -> np.ndarray:
  """Folded Morgan (ECFP-like) bit fingerprints, as MassSpecGym's
  ``MolFingerprinter``.

  Args:
    smiles: ``N`` SMILES strings.
    n_bits: fingerprint size ``F`` (MassSpecGym: 4096).
    radius: Morgan radius (MassSpecGym: 2).

  Returns:
    ``[N, F]`` uint8.
  """
  n_bits = V.check_int(n_bits, "n_bits", min_value=1)
  radius = V.check_int(radius, "radius", min_value=0)
  mols = _mols(smiles)
  from rdkit.Chem import rdFingerprintGenerator

  gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
  out = np.zeros((len(mols), n_bits), np.uint8)
  for i, m in enumerate(mols):
    out[i] = gen.GetFingerprintAsNumPy(m)
  return out


def monoisotopic_masses(smiles: Sequence[str]) -> np.ndarray:
  """Monoisotopic masses of neutral molecules (RDKit's ``ExactMolWt``).

  Args:
    smiles: ``N`` SMILES strings.

  Returns:
    ``[N]`` float64 numpy masses in Da.
  """
  from rdkit.Chem.rdMolDescriptors import CalcExactMolWt as ExactMolWt

  return np.array([ExactMolWt(m) for m in _mols(smiles)], np.float64)


def _fragment_masses(mol) -> list[float]:
  """Neutral masses of both sides of every acyclic single bond between heavy
  atoms."""
  from rdkit.Chem import rdchem

  pt = rdchem.GetPeriodicTable()
  h = pt.GetMostCommonIsotopeMass("H")
  atom_m = np.array(
    [
      pt.GetMostCommonIsotopeMass(a.GetSymbol()) + a.GetTotalNumHs() * h
      for a in mol.GetAtoms()
    ]
  )
  total = float(atom_m.sum())
  n = mol.GetNumAtoms()
  adj = [[] for _ in range(n)]
  for b in mol.GetBonds():
    i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
    adj[i].append(j)
    adj[j].append(i)
  out = []
  for b in mol.GetBonds():
    if b.IsInRing() or b.GetBondType() != rdchem.BondType.SINGLE:
      continue
    i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
    seen, stack = {i}, [i]
    while stack:  # the side of i once the bond (i, j) is cut
      u = stack.pop()
      for v in adj[u]:
        if v not in seen and not (u == i and v == j):
          seen.add(v)
          stack.append(v)
    side = float(atom_m[list(seen)].sum())
    # A hydrogen moves to the charged side on cleavage (a crude, fixed rule).
    out += [side - h, total - side - h]
  return out


def simulate_spectra(
  smiles: Sequence[str],
  *,
  seed: int,
  n_bins: int = 1000,
  max_mz: float = 1000.0,
  dropout: float = 0.2,
  noise_peaks: tuple[int, int] = (5, 15),
  mz_jitter: float = 0.01,
) -> np.ndarray:
  """Simulated, binned fragmentation spectra (a labelled proxy for MS/MS; see
  the module doc).

  Deterministic given ``seed`` and the molecule's position ``i``
  (``default_rng([seed, i])``).

  Args:
    smiles: ``N`` SMILES strings.
    seed: the simulation seed.
    n_bins: number of m/z bins over ``[0, max_mz)``.
    max_mz: upper m/z bound (peaks above it are dropped).
    dropout: probability of dropping each fragment peak (the precursor is kept).
    noise_peaks: ``(lo, hi)`` inclusive range of uniform noise peaks.
    mz_jitter: standard deviation of the m/z noise (Da).

  Returns:
    ``[N, n_bins]`` float32 relative intensities (max 1 per spectrum).
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n_bins = V.check_int(n_bins, "n_bins", min_value=1)
  max_mz = V.check_float(max_mz, "max_mz", min_value=0.0, min_inclusive=False)
  dropout = V.check_float(
    dropout, "dropout", min_value=0.0, max_value=1.0, max_inclusive=False
  )
  mz_jitter = V.check_float(mz_jitter, "mz_jitter", min_value=0.0)
  lo, hi = (V.check_int(v, "noise_peaks", min_value=0) for v in noise_peaks)
  if hi < lo:
    raise ValueError(
      f"noise_peaks must be (lo, hi) with lo <= hi, got {noise_peaks}"
    )
  from rdkit.Chem.rdMolDescriptors import CalcExactMolWt as ExactMolWt

  mols = _mols(smiles)
  out = np.zeros((len(mols), n_bins), np.float32)
  width = max_mz / n_bins
  for i, m in enumerate(mols):
    rng = np.random.default_rng([seed, i])
    prec = ExactMolWt(m) + PROTON
    ions = np.asarray(_fragment_masses(m), float) + PROTON
    # + H2O / NH3 losses
    frags = np.concatenate([ions, [prec - 18.010565, prec - 17.026549]])
    frags = frags[frags > 20.0]
    keep = rng.random(frags.shape) >= dropout
    mz = np.concatenate([[prec], frags[keep]])
    inten = np.concatenate(
      [[rng.lognormal(0.0, 0.5)], rng.lognormal(0.0, 1.0, keep.sum())]
    )
    k = rng.integers(lo, hi + 1)
    mz = np.concatenate([mz, rng.uniform(20.0, prec, k)])
    inten = np.concatenate([inten, 0.1 * rng.lognormal(0.0, 1.0, k)])
    mz = mz + rng.normal(0.0, mz_jitter, mz.shape)
    idx = np.floor(mz / width).astype(int)
    ok = (idx >= 0) & (idx < n_bins)
    np.add.at(out[i], idx[ok], inten[ok])
    mx = out[i].max()
    if mx > 0:
      out[i] /= mx
  return out


def bin_spectra(
  mzs: Sequence[Sequence[float]],
  intensities: Sequence[Sequence[float]],
  *,
  n_bins: int = 10050,
  max_mz: float = 1005.0,
) -> np.ndarray:
  """Bins peak lists into ``[N, n_bins]`` relative intensities (MassSpecGym's
  ``SpecBinner``).

  Intensities falling in one bin are summed; each spectrum is divided by its
  maximum.

  Args:
    mzs: ``N`` sequences of m/z values.
    intensities: ``N`` sequences of intensities (same lengths as ``mzs``).
    n_bins: number of bins over ``[0, max_mz)`` (reference: 0.1 Da up to 1005).
    max_mz: upper bound.

  Returns:
    ``[N, n_bins]`` float32.
  """
  n_bins = V.check_int(n_bins, "n_bins", min_value=1)
  max_mz = V.check_float(max_mz, "max_mz", min_value=0.0, min_inclusive=False)
  if len(mzs) != len(intensities):
    raise ValueError(
      "mzs and intensities must have the same length, "
      f"got {len(mzs)} and {len(intensities)}"
    )
  out = np.zeros((len(mzs), n_bins), np.float32)
  for i, (m, s) in enumerate(zip(mzs, intensities)):
    m, s = np.asarray(m, float), np.asarray(s, float)
    if m.shape != s.shape:
      raise ValueError(
        f"spectrum {i}: {m.size} m/z values but {s.size} intensities"
      )
    if np.any(s < 0) or not np.all(np.isfinite(s)):
      raise ValueError(f"spectrum {i}: intensities must be finite and >= 0")
    idx = np.floor(m / (max_mz / n_bins)).astype(int)
    ok = (idx >= 0) & (idx < n_bins)
    np.add.at(out[i], idx[ok], s[ok])
    mx = out[i].max()
    if mx > 0:
      out[i] /= mx
  return out


class CandidateSet(NamedTuple):
  """Candidate pools over a library (host-side numpy).

  Attributes:
    index: ``[Q, C]`` int32 library indices of the candidates (0 in padding).
    labels: ``[Q, C]`` bool, True where the candidate is the query's molecule.
    mask: ``[Q, C]`` bool, False for padding.
    sigma_min: ``[Q]`` float32 min pairwise Tanimoto in the pool.
    sigma_max: ``[Q]`` float32 max pairwise Tanimoto in the pool.
  """

  index: np.ndarray  # pyright: ignore[reportIncompatibleMethodOverride]  # public field name
  labels: np.ndarray
  mask: np.ndarray
  sigma_min: np.ndarray
  sigma_max: np.ndarray


def _tanimoto_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  a32, b32 = a.astype(np.float32), b.astype(np.float32)
  inter = a32 @ b32.T
  union = a32.sum(1)[:, None] + b32.sum(1)[None, :] - inter
  return np.where(union > 0, inter / np.maximum(union, 1), 0.0).astype(
    np.float32
  )


def _first_unique(
  order: np.ndarray, group: np.ndarray, size: int
) -> np.ndarray:
  """The first ``size`` entries of ``order`` whose ``group`` has not been taken
  before."""
  _, first = np.unique(group[order], return_index=True)
  keep = np.sort(first)[:size]
  return order[keep]


def _unique_pools(fps, masses, queries, *, mode, size, rng, block):
  """``[Q, size]`` pools of distinct fingerprints in each mode's order of
  preference."""
  n = fps.shape[0]
  _, group = np.unique(fps, axis=0, return_inverse=True)
  group = group.reshape(-1)
  if group.max() + 1 < size:
    raise ValueError(
      "size must be at most the number of distinct fingerprints in fps "
      f"({group.max() + 1}) with unique_fingerprints=True, got {size}"
    )
  index = np.zeros((len(queries), size), np.int64)
  if mode == "hard":
    for s in range(0, len(queries), block):
      qs = queries[s : s + block]
      t = _tanimoto_matrix(fps[qs], fps)
      t[np.arange(len(qs)), qs] = np.inf  # the query itself first
      order = np.argsort(-t, axis=1, kind="stable")
      for r, o in enumerate(order):
        index[s + r] = _first_unique(o, group, size)
    return index
  for r, qi in enumerate(queries):
    if mode == "mass":
      d = np.abs(masses - masses[qi]) + (np.arange(n) != qi) * 1e-12
      order = np.argsort(d, kind="stable")
    else:
      others = rng.permutation(n - 1)
      order = np.concatenate([[qi], others + (others >= qi)])
    index[r] = _first_unique(order, group, size)
  return index


def build_candidates(
  fps: np.ndarray,
  masses: np.ndarray,
  queries: np.ndarray,
  *,
  mode: str,
  size: int,
  seed: int,
  block: int = 256,
  unique_fingerprints: bool = False,
) -> CandidateSet:
  """One candidate pool of ``size`` library molecules per query, the query's
  molecule included.

  ``'mass'``: the ``size`` molecules nearest in monoisotopic mass (MassSpecGym's
  "mass" setting, with a fixed count instead of a ppm window); ``'hard'``: the
  ``size`` nearest by Tanimoto (a high σ_max); ``'random'``: ``size - 1``
  uniform draws. Each pool is shuffled so the true molecule's slot carries no
  information.

  With ``unique_fingerprints=True`` the pool is deduplicated by structure as a
  fingerprint sees it: candidates are taken in the same order of preference
  (nearest mass, nearest Tanimoto, random order), the query's molecule first,
  and a molecule whose fingerprint equals one already in the pool is skipped. No
  two candidates then tie under any fingerprint similarity, so HR@k measures
  retrieval rather than the luck of tie-breaking. (Distinct InChIKeys can share
  a folded fingerprint; the bundled library is already unique by InChIKey block
  1.) The default (False) keeps the pools of earlier versions unchanged.

  Args:
    fps: ``[N, F]`` binary library fingerprints.
    masses: ``[N]`` masses.
    queries: ``[Q]`` int library indices of the query molecules.
    mode: ``'mass'``, ``'hard'`` or ``'random'``.
    size: candidates per pool, ``2 <= size <= N``.
    seed: numpy seed (random draws and shuffles).
    block: queries per block of the Tanimoto computation.
    unique_fingerprints: skip candidates whose fingerprint is already in the
      pool (above).

  Returns:
    A :class:`CandidateSet`.

  Raises:
    ValueError: naming the argument; with ``unique_fingerprints`` also when the
      library holds fewer than ``size`` distinct fingerprints.
  """
  if mode not in _MODES:
    raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
  fps = np.asarray(fps)
  if fps.ndim != 2 or not np.isin(fps, (0, 1)).all():
    raise ValueError(
      f"fps must be a binary [N, F] array, got shape {fps.shape}"
    )
  n = fps.shape[0]
  masses = np.asarray(masses, np.float64)
  if masses.shape != (n,):
    raise ValueError(f"masses must have shape [N] = ({n},), got {masses.shape}")
  queries = np.asarray(queries)
  if queries.ndim != 1 or not np.issubdtype(queries.dtype, np.integer):
    raise ValueError(
      f"queries must be a 1-D int array of library indices, got {queries.dtype}"
    )
  if queries.size and (queries.min() < 0 or queries.max() >= n):
    raise ValueError(f"queries must index the library: 0 <= q < {n}")
  size = V.check_int(size, "size", min_value=2, max_value=n)
  seed = V.check_int(seed, "seed", min_value=0)
  if not isinstance(unique_fingerprints, bool):
    raise TypeError(
      f"unique_fingerprints must be True or False, got {unique_fingerprints!r}"
    )
  rng = np.random.default_rng(seed)
  q = len(queries)
  index = np.zeros((q, size), np.int64)
  if unique_fingerprints:
    index = _unique_pools(
      fps, masses, queries, mode=mode, size=size, rng=rng, block=block
    )
  elif mode == "mass":
    order = np.argsort(masses, kind="stable")
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    # a window around the query's rank, then the nearest
    for r, qi in enumerate(queries):
      p = pos[qi]
      win = order[max(0, p - size) : p + size + 1]
      d = np.abs(masses[win] - masses[qi]) + (win != qi) * 1e-12
      index[r] = win[np.argsort(d, kind="stable")[:size]]
  elif mode == "hard":
    for s in range(0, q, block):
      qs = queries[s : s + block]
      t = _tanimoto_matrix(fps[qs], fps)
      t[np.arange(len(qs)), qs] = np.inf  # the query itself first
      index[s : s + block] = np.argsort(-t, axis=1, kind="stable")[:, :size]
  else:
    for r, qi in enumerate(queries):
      others = rng.choice(n - 1, size - 1, replace=False)
      others = others + (others >= qi)
      index[r] = np.concatenate([[qi], others])
  for r in range(q):
    rng.shuffle(index[r])
  labels = index == queries[:, None]
  mask = np.ones((q, size), bool)
  lo = np.zeros(q, np.float32)
  hi = np.zeros(q, np.float32)
  off = ~np.eye(size, dtype=bool)
  for r in range(q):
    t = _tanimoto_matrix(fps[index[r]], fps[index[r]])[off]
    lo[r], hi[r] = t.min(), t.max()
  return CandidateSet(index.astype(np.int32), labels, mask, lo, hi)


def _parse_floats(text: str, what: str, where: str) -> list[float]:
  try:
    return [float(v) for v in text.split(",") if v.strip()]
  except ValueError:
    raise ValueError(
      f"{where}: column {what!r} must be comma-separated numbers"
    ) from None


def read_massspecgym(
  data_dir: str | os.PathLike, *, file: str = ("MassSpecGym.tsv")
) -> dict:
  """Reads MassSpecGym spectra from ``<data_dir>/<file>`` (the TSV layout, or
  MGF by suffix).

  TSV: a header with at least ``identifier, mzs, intensities, fold, smiles``
  (``mzs`` and ``intensities`` comma-separated); extra columns
  (``precursor_mz``, ``inchikey``, ...) are kept as strings. MGF: ``BEGIN IONS``
  / ``KEY=value`` lines / ``mz intensity`` lines / ``END IONS``, with keys
  ``IDENTIFIER``, ``SMILES``, ``FOLD`` (case-insensitive).

  Args:
    data_dir: the folder holding the file.
    file: the file name (``.tsv`` or ``.mgf``), a relative path inside
      ``data_dir`` (``..``, absolute paths and symlinks leading outside raise
      ``ValueError``).

  Returns:
    ``{'identifier', 'smiles', 'fold': list[str], 'mzs', 'intensities':
    list[np.ndarray], plus any other column: list[str]}``.

  Raises:
    FileNotFoundError: naming the path. ValueError: naming the file and the bad
      record.
  """
  V.check_path(data_dir, "data_dir")
  # no '..', absolute or linked-out file
  path = resolve_inside(data_dir, file, name="file")
  if not path.exists():
    raise FileNotFoundError(
      f"{path} not found: download MassSpecGym (Hugging Face "
      "roman-bushuiev/MassSpecGym) into data_dir"
    )
  need = ("identifier", "mzs", "intensities", "fold", "smiles")
  out: dict = {}
  if path.suffix.lower() == ".mgf":
    recs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for ln, line in enumerate(path.read_text().splitlines(), 1):
      line = line.strip()
      if not line:
        continue
      if line == "BEGIN IONS":
        cur = {"mzs": [], "intensities": []}
      elif line == "END IONS":
        if cur is None:
          raise ValueError(f"{path}:{ln}: END IONS without BEGIN IONS")
        recs.append(cur)
        cur = None
      elif cur is None:
        continue
      elif "=" in line and not line[0].isdigit():
        k, v = line.split("=", 1)
        cur[k.strip().lower()] = v.strip()
      else:
        parts = line.split()
        try:
          mz, it = float(parts[0]), float(parts[1])
        except (ValueError, IndexError):
          raise ValueError(
            f"{path}:{ln}: expected 'mz intensity', got {line!r}"
          ) from None
        cur["mzs"].append(mz)
        cur["intensities"].append(it)
    if cur is not None:
      raise ValueError(f"{path}: the last record has no END IONS")
    for i, r in enumerate(recs):
      miss = [k for k in need if k not in r]
      if miss:
        raise ValueError(f"{path}: record {i} lacks {miss}")
    keys = sorted({k for r in recs for k in r})
    for k in keys:
      out[k] = [r.get(k) for r in recs]
  else:
    with path.open(newline="", encoding="utf-8") as f:
      reader = csv.DictReader(f, delimiter="\t")
      fieldnames = reader.fieldnames or []
      miss = [k for k in need if k not in fieldnames]
      if miss:
        raise ValueError(
          f"{path}: missing column(s) {miss}; found {reader.fieldnames}"
        )
      rows = list(reader)
    for k in fieldnames:
      out[k] = [r[k] for r in rows]
    for k in ("mzs", "intensities"):
      out[k] = [
        _parse_floats(v, k, f"{path} row {i + 2}") for i, v in enumerate(out[k])
      ]
  for i, (m, s) in enumerate(zip(out["mzs"], out["intensities"])):
    if len(m) != len(s):
      raise ValueError(
        f"{path}: record {i} has {len(m)} m/z values but {len(s)} intensities"
      )
  out["mzs"] = [np.asarray(m, np.float64) for m in out["mzs"]]
  out["intensities"] = [np.asarray(s, np.float64) for s in out["intensities"]]
  return out


def read_candidates(path: str | os.PathLike) -> dict[str, list[str]]:
  """Reads a MassSpecGym candidates JSON.

  Args:
    path: the JSON file, a mapping ``{query SMILES: [candidate SMILES, ...]}``.

  Returns:
    the mapping query SMILES -> list of candidate SMILES, as stored.

  Raises:
    FileNotFoundError: ``path`` does not exist.
    ValueError: the file is not JSON of that form.
  """
  V.check_path(path, "path")
  path = pathlib.Path(path)
  if not path.exists():
    raise FileNotFoundError(f"{path} not found")
  try:
    obj = json.loads(path.read_text())
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}: not valid JSON ({e})") from None
  if not isinstance(obj, dict) or not all(
    isinstance(v, list) and all(isinstance(c, str) for c in v)
    for v in obj.values()
  ):
    raise ValueError(
      f"{path}: expected a mapping query SMILES -> list of candidate SMILES"
    )
  return obj
