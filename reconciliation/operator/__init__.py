"""What a person sees and does: the health overview, the exception queue, an alert's evidence
side by side, every change a person makes (`actions`, the one way in for the CLI, the JSON API
and the console alike; `provider_actions` for those that ask the provider for something), and
the audit trail of those changes (`audit_trail`).

Shapes and queries live here rather than in `app/console/`, so the CLI could show the same
figures without the web layer.
"""

from reconciliation.operator import actions, provider_actions
from reconciliation.operator.actions import ActionRefusedError, OperatorService, UnknownSubjectError
from reconciliation.operator.alert_evidence import (
    AGES,
    AlertFilter,
    AlertPage,
    BrowseError,
    Evidence,
    alert_page,
    evidence_of,
)
from reconciliation.operator.alert_kinds import ALL_ALERT_KINDS, UnknownAlertKindError, checked_kind
from reconciliation.operator.audit_trail import API, CLI, CONSOLE, Actor
from reconciliation.operator.audit_trail import recent as recent_audit
from reconciliation.operator.console_sessions import SessionRules, count_live, live_operator
from reconciliation.operator.exception_queue import (
    AGE_BUCKETS,
    COUNT_CAP,
    STREAMS,
    QueueError,
    QueuePage,
    queue_page,
)
from reconciliation.operator.overview import Overview, read_overview
from reconciliation.operator.provider_actions import register_webhook, rotate_webhook_secret

__all__ = [
    "AGES",
    "AGE_BUCKETS",
    "ALL_ALERT_KINDS",
    "API",
    "CLI",
    "CONSOLE",
    "COUNT_CAP",
    "STREAMS",
    "ActionRefusedError",
    "Actor",
    "AlertFilter",
    "AlertPage",
    "BrowseError",
    "Evidence",
    "OperatorService",
    "Overview",
    "QueueError",
    "QueuePage",
    "SessionRules",
    "UnknownAlertKindError",
    "UnknownSubjectError",
    "actions",
    "alert_page",
    "checked_kind",
    "count_live",
    "evidence_of",
    "live_operator",
    "provider_actions",
    "queue_page",
    "read_overview",
    "recent_audit",
    "register_webhook",
    "rotate_webhook_secret",
]
