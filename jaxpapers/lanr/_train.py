"""The LAnR objective on cached hidden states (frozen LM): L = λ_r L_ret + λ_c
L_ctl.

With the LM frozen, L_gen is constant and drops out; the heads train on states
cached once per gold-prefix context (the spec's Track B). **Reconstruction**:
the retrieval candidates are the whole index (which contains the in-batch
documents and the hard negatives: same relation, other entity), minus the
documents already in the context; the positive is the next gold document in the
chain's order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V
from jaxpapers.lanr._config import LAnRConfig
from jaxpapers.lanr._heads import control_logits, doc_embedding, query_embedding
from jaxpapers.lanr._losses import control_loss, info_nce


def lanr_loss(
  heads: dict[str, jax.Array],
  control: dict[str, jax.Array],
  batch: dict[str, jax.Array],
  *,
  cfg: LAnRConfig,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  r"""λ_r · InfoNCE(e_q, e_d; next gold, candidates ∉ context) + λ_c · BCE(s,
  y).

  Args:
    heads: {'p_q', 'p_d'}.
    control: the control MLP's params.
    batch: dict of z f [B, H] [PRED] states of gold-prefix contexts c_t; doc_h f
      [N, H] [DOC] states of the whole index; next_doc int [B] the next gold
      document (−1: none left, the context is sufficient); in_context bool
      [B, N] documents already in c_t; ctl_label f [B] the control target y_t
      (entropy or oracle rule).
    cfg: `LAnRConfig` (tau_ret, lambda_ret, lambda_ctl).

  Returns:
    (loss [], aux dict with 'ret' and 'ctl').
  """
  if not isinstance(cfg, LAnRConfig):
    raise TypeError(f"cfg must be a LAnRConfig, got {type(cfg).__name__}")
  need = ("z", "doc_h", "next_doc", "in_context", "ctl_label")
  if not isinstance(batch, dict) or any(k not in batch for k in need):
    raise ValueError(f"batch must be a dict with keys {need}")
  z = V.check_array(batch["z"], "batch['z']", ndim=2, dtype="float")
  B = z.shape[0]
  doc_h = V.check_array(batch["doc_h"], "batch['doc_h']", ndim=2, dtype="float")
  N = doc_h.shape[0]
  nxt = V.check_array(
    batch["next_doc"], "batch['next_doc']", shape=(B,), dtype=("int")
  )
  inc = V.check_array(
    batch["in_context"], "batch['in_context']", shape=(B, N), dtype=("intbool")
  )
  y = V.check_array(
    batch["ctl_label"], "batch['ctl_label']", shape=(B,), dtype=("real")
  )
  ok = V.check_values(
    jnp.all((nxt >= -1) & (nxt < N)), f"batch['next_doc'] must lie in [-1, {N})"
  )
  e_q = query_embedding(heads, z)
  e_d = doc_embedding(heads, doc_h)
  pos = jnp.arange(N)[None, :] == nxt[:, None]
  ret = info_nce(e_q, e_d, pos, tau=cfg.tau_ret, cand_mask=~inc.astype(bool))
  ctl = control_loss(control_logits(control, jax.lax.stop_gradient(z)), y)
  loss = cfg.lambda_ret * ret + cfg.lambda_ctl * ctl
  return V.poison((loss, {"ret": ret, "ctl": ctl}), ok)
