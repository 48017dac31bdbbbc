"""The requests stream: what we asked the provider to do.

Every write we send is recorded with its Idempotency-Key before it goes out; transfers we
created, were told of or track are polled until their status is terminal.
"""
