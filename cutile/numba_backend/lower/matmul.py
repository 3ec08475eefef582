"""Lowering of mma (placeholder)."""
