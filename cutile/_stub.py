"""``cuda.tile._stub`` (where 1.7 declares its tile functions) at the same private path, e.g.
``from cuda.tile._stub import pack_to_bytes`` in TileGym: every name is ``cutile``'s own."""

from ._aliases import forwarding_getattr

__getattr__ = forwarding_getattr("cutile._stub")
