"""What the provider's webhook deliveries say, in whatever plausible shape it sends them.

The company spec shows no delivery payload and no delivery headers, so recon cannot assume one
shape. `upstream.webhooks.payloads` reads a verified delivery (bytes and headers) into one
normalised notification, trying several shapes, and says exactly what was missing when none
fits. Signatures stay in `upstream.signatures`: they are checked before anything here runs.
"""
