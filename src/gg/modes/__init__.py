"""Execution modes: tool-calling and responses as code (SPEC M1, M2)."""
