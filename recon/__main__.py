"""`python -m recon` is the `recon` command (useful before the script is on PATH)."""

from recon.cli.main import main

main()
