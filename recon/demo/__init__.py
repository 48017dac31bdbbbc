"""The main job in one command: sandbox, recon's processes, a scenario with known faults, a report."""
