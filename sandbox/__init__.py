"""A faithful, runnable stand-in for the provider's two APIs, with fault injection.

- ``sandbox.server.SandboxServer(config)``: the sandbox under uvicorn in a thread, for tests
  (``.base_url``, ``.state``, ``.config``); ``sandbox.server.serve(host, port, config)``:
  blocking, for ``recon sandbox --port 8080`` (also ``python -m sandbox``).
- ``sandbox.app.create_app(config, state)``: the Litestar app, for an in-process transport.
- ``sandbox.state.SandboxState``: the whole world in memory; ``state.clock.advance(s)`` and
  ``state.run_due()`` / ``state.settle_now()`` drive time; ``sandbox.bulk.build_bulk(state, ...)`` fills the
  ledger for benchmarks.
- Control API under ``/_sandbox`` (see ``sandbox.control`` and docs/decisions.md, "Sandbox").

recon never imports this package: it is only ever on the far side of an HTTP boundary.
"""
