"""The 'checkpoint' track (a Hugging Face checkpoint directory, e.g. Qwen3-8B in
full.py)."""

import numpy as np
import pytest

from experiments.locos import real, train
from experiments.locos.configs import full
from tests.lm.test_safetensors import GEMMA_CFG, _checkpoint, _hf_tensors

pytest.importorskip("tokenizers")


def test_full_config_without_a_checkpoint_stops_before_any_track(tmp_path):
  c = full.get_config()
  assert "checkpoint" in c.tracks and c.real.checkpoint_dtype == "bfloat16"
  assert "lower_k_collapse_checkpoint_filtered" in [cl["id"] for cl in c.claims]
  with pytest.raises(ValueError, match="real.checkpoint_dir"):
    train.train_and_evaluate(c, str(tmp_path))
  assert not any(tmp_path.iterdir())  # the toy track did not start


def test_checkpoint_track_loads_the_directory_in_the_configured_dtype(tmp_path):
  _checkpoint(
    tmp_path, GEMMA_CFG, _hf_tensors(np.random.default_rng(0), 6, "gemma")
  )
  c = full.get_config()
  c.real.checkpoint_dir = str(tmp_path)
  loader, label = real.REAL_MODELS["checkpoint"]
  cfg, params, tok = loader(c.real)
  assert cfg.arch == "gemma3" and params["wq"].dtype == np.dtype("bfloat16")
  assert tok.bos_id == 1 and "checkpoint" in label
  c.real.checkpoint_dtype = "float16"
  with pytest.raises(ValueError, match="checkpoint_dtype"):
    train.train_and_evaluate(c, str(tmp_path / "run"))
