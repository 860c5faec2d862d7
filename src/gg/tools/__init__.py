"""Registry tools, capabilities and toolset arms (SPEC T1)."""
