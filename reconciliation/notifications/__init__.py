"""The claims stream: what the provider's webhooks say happened.

The inbox of raw deliveries (bytes kept exactly as received), their processing into normalised
notifications, and our webhook registration whose health decides whether any claim arrives.
"""
