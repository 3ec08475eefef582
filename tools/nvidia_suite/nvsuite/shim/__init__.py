"""Hand-written ``cuda.tile.<private>`` modules the suite imports by name (see ``finder``).

Each gives what the suite needs to *collect* and to decide its own skips (versions, compute
capability, feature switches), uses cutile's real equivalent where there is one, and turns
every other name into a ``not applicable`` stand-in (``placeholder.fallback_getattr``).
"""
