"""The floor under both the ``ct`` operations (``cutile/api``) and the AST walker
(``cutile/frontend``): the value model of compile-time evaluation (``values``), the compile
context ops emit IR through (``context``), conversions and promotion of values (``coerce``),
runtime strings (``strings``) and the one registry that maps a Python callable (``ct`` ops,
``operator.*``, builtins) or a value attribute to its compile-time implementation
(``registry``).  ``api`` fills the registry on import; the walker only consults it, so neither
imports the other.  Nothing here imports ``api``, ``frontend``, or an executor.
"""
