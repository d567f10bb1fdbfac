"""From NumPy's arguments to what the C runner executes, and the eager call around it.

``calls.py`` is the entry: a reduction or scan of an array in memory (host or device), done now; it picks
numpy.ma's and memmap's handling (``subclasses.py``), mean's two rewrites (``mean.py``), else one plan
(``plan.py``: variant, result dtype, layout from ``layout.py``, operands from ``operands.py``, the result in the
input's kind from ``results.py``), run by ``_core.run`` and finished by NumPy's rules (``numpy_rules.py``).  The
public functions (gpureduce/reductions.py, scans.py, ...) and gpureduce.dask's chunks call it; nothing here
imports them.
"""
