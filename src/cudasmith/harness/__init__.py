"""The judge: isolated workers, reference outputs out of the candidate's reach, comparison, timing, verdicts."""
