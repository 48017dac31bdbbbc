"""What the operator console shows and does: the health overview, the exception queue, an
alert's evidence side by side, a person's actions, and the audit trail of those actions.

Shapes and queries live here rather than in `app/console/`, so the CLI could show the same
figures without the web layer.
"""
