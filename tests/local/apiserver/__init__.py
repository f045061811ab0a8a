"""Tests of the embedded API server, each folder mirroring its package; what spans them (bad input, fidelity, kubectl)
at this level."""
