"""``python -m sandbox --port 8080``: the sandbox without the recon CLI."""

from __future__ import annotations

import argparse

from sandbox.config import SandboxConfig
from sandbox.fees import FeeScheduleError, parse_fee_schedule
from sandbox.server import serve
from sandbox.variants import VariantError, parse_variant


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--finality-delay", type=float, default=2.0)
    parser.add_argument("--projection-lag", type=float, default=0.5)
    parser.add_argument(
        "--signature-scheme",
        default="standard",
        choices=[
            "standard",
            "ed25519",
            "hmac-sha256-hex",
            "hmac-sha256-base64",
            "hmac-sha512-hex",
            "hmac-sha512-base64",
        ],
    )
    parser.add_argument(
        "--variant",
        default="recon",
        help="provider variant: a preset (recon, standard, sparse) and optional "
        "choice=value overrides, comma-separated (see docs/decisions.md)",
    )
    parser.add_argument(
        "--fees",
        default="",
        help="fee schedule, e.g. flat=2500,bp=50,bearer=sender_pays,drift=0,split.flat=100 "
        "(empty: no fees; see docs/decisions.md)",
    )
    args = parser.parse_args(argv)
    try:
        variant = parse_variant(args.variant)
        fee_schedule = parse_fee_schedule(args.fees)
    except (VariantError, FeeScheduleError) as exc:
        parser.error(str(exc))
    config = SandboxConfig(
        variant=variant,
        seed=args.seed,
        transfer_finality_delay_seconds=args.finality_delay,
        projection_lag_seconds=args.projection_lag,
        signature_scheme=args.signature_scheme,
        fee_schedule=fee_schedule,
    )
    serve(args.host, args.port, config)


if __name__ == "__main__":
    main()
