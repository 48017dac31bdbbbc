"""The ledger stream: what the provider actually posted.

Holdings discovered from the endpoint register, their activity cursors and pages of committed
postings, and balance snapshots. This is the truth the other two streams are checked against.
"""
