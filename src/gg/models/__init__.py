"""Model providers behind one protocol (SPEC M4)."""
