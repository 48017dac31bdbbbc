"""The ground every other package of recon stands on: settings, logging, secrets, money.

Nothing here imports another package of ours, so any of them may import it; see
docs/architecture.md for the whole graph and the test that holds it.
"""
