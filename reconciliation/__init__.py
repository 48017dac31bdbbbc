"""The domain: the store, the three streams, matching, drift, alerts, reports, the pass.

Each package below names its own surface in its `__init__`. The four modules that stand alone
at this level (the pass, its policy, its progress, its lease) are used from outside through the
names listed here, never as modules (an import-linter contract holds it). Modules inside
reconciliation import each other's leaves, never this file, which would make a circle.
"""

from reconciliation.policy import ReconcilePolicy
from reconciliation.progress import Progress, SilentProgress
from reconciliation.reconcile import LAST_PASS_MILLIS, run_pass

__all__ = ["LAST_PASS_MILLIS", "Progress", "ReconcilePolicy", "SilentProgress", "run_pass"]
