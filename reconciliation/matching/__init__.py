"""Matching postings, transfers and notifications, set-based and incremental (see run.py)."""

from reconciliation.matching.candidates import CandidateError, Explanation, explain
from reconciliation.matching.outcome import Ambiguity, MatchTally
from reconciliation.matching.run import match_all

__all__ = [
    "Ambiguity",
    "CandidateError",
    "Explanation",
    "MatchTally",
    "explain",
    "match_all",
]
