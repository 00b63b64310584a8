"""Answering without a model: passages shaped by the document, one general ranker, confidence from it.

The no-key backend (llm/extractive) finds and shows: it splits a source into the passages a reader
would quote (`passages`), ranks them for each question with one logistic model over general
features (`ranker`, weights fitted across several real corpora by bench/fit_ranker.py), and says
how sure it is from those probabilities and the agreement of independent sources (`confidence`).
"""
