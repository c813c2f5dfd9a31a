"""Dual-Rate Diffusion: a sparse heavy context encoder and a light per-step denoiser.

Ruhe, Hoogeboom, Bartosh, Heek, Mensink, Salimans. "Dual-Rate Diffusion: Accelerating
diffusion models with an interleaved heavy-light network", arXiv:2605.18190 (NeurIPS 2026).
No code is public; the networks, the stale-context training objective, the refresh-set sampler
and the combination with Moment Matching Distillation (arXiv:2406.04103) are reconstructions.
"""

from jaxpapers.dual_rate._schedule import (
    NoiseSchedule,
    ancestral_step,
    ddim_step,
    edm_preconditioning,
    edm_sigma_to_t,
    eps_from_x,
    karras_sigmas,
    loss_weight,
    output_to_x,
    posterior,
    q_sample,
    v_from_x_eps,
    x_from_eps,
    x_from_v,
)

__all__ = [
    "NoiseSchedule", "ancestral_step", "ddim_step", "edm_preconditioning", "edm_sigma_to_t",
    "eps_from_x", "karras_sigmas", "loss_weight", "output_to_x", "posterior", "q_sample",
    "v_from_x_eps", "x_from_eps", "x_from_v",
]
