"""What a person sees and does: the health overview, the exception queue, an alert's evidence
side by side, every change a person makes (`actions`, the one way in for the CLI, the JSON API
and the console alike; `provider_actions` for those that ask the provider for something), and
the audit trail of those changes (`audit_trail`).

Shapes and queries live here rather than in `app/console/`, so the CLI could show the same
figures without the web layer.
"""
