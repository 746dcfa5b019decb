"""Analyses of stored runs and datasets: breakdowns, paired comparisons, judge-human
agreement, benchmark statistics, metadata (durations, scene counts) and sweeps.

Everything here reads run directories written by :mod:`mtvbench.run`; nothing re-asks a
model except :mod:`mtvbench.analysis.sweep`, which starts new runs on purpose.
"""
