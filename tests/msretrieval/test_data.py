"""Host-side data: bundled molecules, fingerprints, simulated spectra, pools,
file readers."""

import builtins
import json

import numpy as np
import pytest

import jaxpapers.msretrieval as M

SMILES = [
  "CCO",
  "c1ccccc1O",
  "CC(=O)Nc1ccc(O)cc1",
  "CCN(CC)CC",
  "OC(=O)c1ccccc1C(=O)O",
]


@pytest.fixture(scope="module")
def small():
  smi = M.load_bundled_molecules(60)
  fps = M.morgan_fingerprints(smi, n_bits=256)
  return smi, fps, M.monoisotopic_masses(smi)


def test_bundled_molecules_unique_and_deterministic(small):
  smi, fps, masses = small
  assert len(smi) == 60 and len(set(smi)) == 60
  assert M.load_bundled_molecules(10) == smi[:10]
  assert (
    fps.dtype == np.uint8
    and fps.shape == (60, 256)
    and set(np.unique(fps)) <= {0, 1}
  )
  assert masses.max() <= 1000 and masses.min() > 40


def test_masses_and_fingerprints_hand_cases():
  m = M.monoisotopic_masses(["CCO", "O"])
  np.testing.assert_allclose(m, [46.041865, 18.010565], atol=1e-5)
  fp = M.morgan_fingerprints(["CCO", "CCO", "c1ccccc1"], n_bits=64)
  np.testing.assert_array_equal(fp[0], fp[1])
  assert fp[0].sum() > 0 and not np.array_equal(fp[0], fp[2])


def test_simulated_spectra_deterministic_and_normalised():
  a = M.simulate_spectra(SMILES, seed=0, n_bins=500, max_mz=500.0)
  b = M.simulate_spectra(SMILES, seed=0, n_bins=500, max_mz=500.0)
  c = M.simulate_spectra(SMILES, seed=1, n_bins=500, max_mz=500.0)
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)
  np.testing.assert_allclose(a.max(1), 1.0)
  # The [M+H]+ precursor of ethanol (47.049) is always present (never dropped).
  assert a[0, 47] > 0


def test_bin_spectra_sums_within_a_bin():
  out = M.bin_spectra(
    [[10.02, 10.07, 55.5]], [[1.0, 3.0, 2.0]], n_bins=100, max_mz=100.0
  )
  want = np.zeros(100)
  want[10], want[55] = 4.0, 2.0
  np.testing.assert_allclose(out[0], want / 4.0)


@pytest.mark.parametrize("mode", ["mass", "hard", "random"])
def test_build_candidates(small, mode):
  _, fps, masses = small
  q = np.array([0, 7, 33])
  cs = M.build_candidates(fps, masses, q, mode=mode, size=8, seed=0)
  assert cs.index.shape == (3, 8) and cs.mask.all()
  # the query's molecule once per pool
  np.testing.assert_array_equal(cs.labels.sum(1), 1)
  np.testing.assert_array_equal(cs.index[cs.labels], q)
  for r, qi in enumerate(q):
    idx = cs.index[r]
    assert len(set(idx.tolist())) == 8
    if mode == "mass":  # the 8 nearest masses (brute force)
      want = np.sort(np.abs(masses - masses[qi]))[:8]
      np.testing.assert_allclose(
        np.sort(np.abs(masses[idx] - masses[qi])), want
      )
    if mode == "hard":  # the query + its 7 nearest Tanimoto neighbours
      a = fps[qi].astype(bool)
      t = np.array(
        [
          (a & f.astype(bool)).sum() / max((a | f.astype(bool)).sum(), 1)
          for f in fps
        ]
      )
      t[qi] = 2
      assert np.sort(t[idx])[0] >= np.sort(t)[-8] - 1e-6
    y = fps[idx].astype(bool)
    pair = [
      (y[i] & y[j]).sum() / max((y[i] | y[j]).sum(), 1)
      for i in range(8)
      for j in range(8)
      if i != j
    ]
    assert cs.sigma_max[r] == pytest.approx(max(pair)) and cs.sigma_min[
      r
    ] == pytest.approx(min(pair))


def test_read_massspecgym_tsv_and_mgf(tmp_path):
  (tmp_path / "MassSpecGym.tsv").write_text(
    "identifier\tmzs\tintensities\tfold\tsmiles\tprecursor_mz\n"
    "MSG1\t50.1,60.2\t0.5,1.0\ttrain\tCCO\t47.05\n"
    "MSG2\t70.0\t1.0\ttest\tCCN\t46.06\n"
  )
  d = M.read_massspecgym(tmp_path)
  assert d["identifier"] == ["MSG1", "MSG2"] and d["fold"] == ["train", "test"]
  np.testing.assert_allclose(d["mzs"][0], [50.1, 60.2])
  assert d["precursor_mz"] == ["47.05", "46.06"]
  (tmp_path / "s.mgf").write_text(
    "BEGIN IONS\nIDENTIFIER=MSG1\nSMILES=CCO\nFOLD=val\n50.1 0.5\n60.2 "
    "1.0\nEND IONS\n"
  )
  m = M.read_massspecgym(tmp_path, file="s.mgf")
  assert m["smiles"] == ["CCO"] and m["fold"] == ["val"]
  np.testing.assert_allclose(m["intensities"][0], [0.5, 1.0])
  (tmp_path / "c.json").write_text(json.dumps({"CCO": ["CCO", "COC"]}))
  assert M.read_candidates(tmp_path / "c.json") == {"CCO": ["CCO", "COC"]}


def test_missing_rdkit_names_the_extra(monkeypatch):
  real = builtins.__import__

  def fake(name, *a, **k):
    if name == "rdkit" or name.startswith("rdkit."):
      raise ImportError("no rdkit")
    return real(name, *a, **k)

  monkeypatch.setattr(builtins, "__import__", fake)
  with pytest.raises(ImportError, match=r"jaxpapers\[chem\]"):
    M.morgan_fingerprints(["CCO"])


def test_read_massspecgym_reads_only_inside_data_dir(tmp_path):
  """file='../x.tsv', an absolute file and a symlink out of data_dir are refused
  (they exist)."""
  (tmp_path / "outside").mkdir()
  out = tmp_path / "outside" / "MassSpecGym.tsv"
  out.write_text(
    "identifier\tmzs\tintensities\tfold\tsmiles\nMSG1\t50.1\t1.0\ttrain\tCCO\n"
  )
  root = tmp_path / "root"
  root.mkdir()
  assert M.read_massspecgym(tmp_path / "outside")["identifier"] == ["MSG1"]
  for file in ("../outside/MassSpecGym.tsv", str(out)):
    with pytest.raises(
      ValueError, match=(r"file .* must be a relative path inside")
    ):
      M.read_massspecgym(root, file=file)
  (root / "MassSpecGym.tsv").symlink_to(out)
  with pytest.raises(ValueError, match=r"file 'MassSpecGym.tsv' leads outside"):
    M.read_massspecgym(root)


@pytest.mark.parametrize("mode", ["mass", "hard", "random"])
def test_build_candidates_unique_fingerprints(mode):
  rng = np.random.default_rng(0)
  # 40 molecules over 12 distinct 5-bit fingerprints: most fingerprints appear
  # several times.
  codes = rng.choice(np.arange(1, 32), 12, replace=False)
  # 12 distinct fingerprints
  kinds = ((codes[:, None] >> np.arange(5)) & 1).astype(np.uint8)
  group = np.concatenate([np.arange(12), rng.integers(0, 12, 28)])
  fps = kinds[group]
  masses = rng.uniform(100, 200, 40)
  q = np.array([0, 13, 27, 39])
  cs = M.build_candidates(
    fps, masses, q, mode=mode, size=6, seed=1, unique_fingerprints=True
  )
  np.testing.assert_array_equal(cs.labels.sum(1), 1)
  np.testing.assert_array_equal(cs.index[cs.labels], q)
  for r, qi in enumerate(q):
    idx = cs.index[r]
    # no fingerprint twice in a pool
    assert len({tuple(f) for f in fps[idx]}) == 6
    others = [j for j in range(40) if group[j] != group[qi]]
    # brute force: walk by mass distance, keep the first of each fingerprint
    if mode == "mass":
      seen, want = {group[qi]}, [qi]
      for j in sorted(others, key=lambda j: (abs(masses[j] - masses[qi]), j)):
        if group[j] not in seen and len(want) < 6:
          seen.add(group[j])
          want.append(j)
      assert sorted(idx.tolist()) == sorted(want)
    if mode == "hard":  # the 5 nearest distinct fingerprints by Tanimoto
      t = lambda a, b: (a & b).sum() / max((a | b).sum(), 1)
      sims = sorted(
        (t(kinds[group[qi]], kinds[g]) for g in set(group[others])),
        reverse=True,
      )
      got = sorted((t(fps[qi], fps[j]) for j in idx if j != qi), reverse=True)
      assert got[-1] >= sims[4] - 1e-9
  with pytest.raises(ValueError, match="distinct fingerprints"):
    M.build_candidates(
      fps, masses, q, mode=mode, size=13, seed=1, unique_fingerprints=True
    )
  # The default keeps duplicates (earlier pools unchanged).
  raw = M.build_candidates(fps, masses, q, mode="hard", size=6, seed=1)
  assert any(len({tuple(f) for f in fps[i]}) < 6 for i in raw.index)
