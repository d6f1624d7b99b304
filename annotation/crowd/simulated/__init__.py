"""The simulated crowd: workers answering from a seeded model of a crowd (demo, sweeps, tests)."""
