"""Dual-Rate Diffusion experiment: quality against compute on offline digits."""
