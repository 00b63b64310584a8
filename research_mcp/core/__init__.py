"""The base every layer above shares: settings, errors, ids, the shared models (contracts, role
inputs, gaps), citation checks, plan feasibility and the small utilities (redaction, retry,
printable text, memory). It imports nothing above it (pyproject.toml's import contract)."""
