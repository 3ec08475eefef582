"""``cuda.tile._datatype`` (1.7's dtype objects) at the same private path, e.g.
``from cuda.tile._datatype import float4_e2m1fn`` in TileGym: every name is ``cutile``'s own."""

from ._aliases import forwarding_getattr

__getattr__ = forwarding_getattr("cutile._datatype")
