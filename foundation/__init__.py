"""The ground every other package of recon stands on: settings, logging, secrets, money.

Nothing here imports another package of ours, so any of them may import it; see
docs/architecture.md for the whole graph and the test that holds it. The names below are what
the other packages use; they import them from here, never from a module behind this file (an
import-linter contract holds it), so a module moved or split here changes no caller. Modules of
foundation import each other's leaves, never this file, which would make a circle.
"""

from foundation.logs import (
    bind_correlation_id,
    clear_correlation,
    configure_logging,
    log_item,
    redact_text,
    register_secrets,
)
from foundation.memory_trace import start_memory_trace
from foundation.money import (
    MAX_AMOUNT_DIGITS,
    AmountError,
    check_digits,
    currency_exponent,
    format_money,
    major_decimal,
    major_to_minor,
    parse_minor_units,
    unit_code,
    use_unit_exponents,
)
from foundation.money_words import said_back
from foundation.quiet_logs import IntervalSummary, OutageLog, PerReasonLimit
from foundation.readable import moment, time_ago, words
from foundation.secret import Secret
from foundation.secret_key import (
    STATE_DIR_MODE,
    SecretBox,
    SharedStoreKeyError,
    make_state_dir,
    provision_secret_keys,
)
from foundation.settings import (
    DEFAULT_STATE_DIR,
    STORE_GROUPS,
    TEST_GATEWAY_KEY_PREFIX,
    ConfigError,
    RetentionSettings,
    Settings,
    WebhookSettings,
    load_settings,
    mask_url_password,
    normalise_database_url,
)
from foundation.settings.timing import unit_exponents
from foundation.untrusted_numbers import CostlyNumberError, decimal_within, excerpt, row_id
from foundation.untrusted_text import bounded, html_text, printable
from foundation.uuid_text import uuid_from_text

__all__ = [
    "DEFAULT_STATE_DIR",
    "MAX_AMOUNT_DIGITS",
    "STATE_DIR_MODE",
    "STORE_GROUPS",
    "TEST_GATEWAY_KEY_PREFIX",
    "AmountError",
    "ConfigError",
    "CostlyNumberError",
    "IntervalSummary",
    "OutageLog",
    "PerReasonLimit",
    "RetentionSettings",
    "Secret",
    "SecretBox",
    "Settings",
    "SharedStoreKeyError",
    "WebhookSettings",
    "bind_correlation_id",
    "bounded",
    "check_digits",
    "clear_correlation",
    "configure_logging",
    "currency_exponent",
    "decimal_within",
    "excerpt",
    "format_money",
    "html_text",
    "load_settings",
    "log_item",
    "major_decimal",
    "major_to_minor",
    "make_state_dir",
    "mask_url_password",
    "moment",
    "normalise_database_url",
    "parse_minor_units",
    "printable",
    "provision_secret_keys",
    "redact_text",
    "register_secrets",
    "row_id",
    "said_back",
    "start_memory_trace",
    "time_ago",
    "unit_code",
    "unit_exponents",
    "use_unit_exponents",
    "uuid_from_text",
    "words",
]
