"""Shared text matching: terms, stems, names, clipping, and what is never a finding."""
