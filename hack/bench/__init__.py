"""Benchmarks: ``make bench`` (about 5 minutes on 2 cores) and ``make bench-full`` (the issue's full sizes).

See :mod:`hack.bench.__main__` for the list and the command line.
"""
