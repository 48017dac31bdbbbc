"""The webhook receiver's hot path: a raw ASGI route, verification, group commit, enqueue."""
