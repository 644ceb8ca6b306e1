"""The compiled twin: ``_kernel`` (built from ``_kernel.pyx`` and the C headers here) has the
same names, arguments and results as :mod:`sinpe._twin`, its NumPy twin."""
