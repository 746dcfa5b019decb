"""Analyses of stored runs and datasets, one module each and each a command
(:data:`mtvbench.analysis.registry.ANALYSES`): the report (leaderboard, breakdowns, report.html),
paired comparisons, judge-human agreement, benchmark statistics, scene counts and sweeps.
Shared pieces: :mod:`.breakdowns`,
:mod:`.metadata` (durations, categories, scene counts).

Everything here reads run directories written by :mod:`mtvbench.run` (through
:class:`mtvbench.run.rundir.RunDirectory`, loaded as :class:`~mtvbench.run.rundir.RunData`); nothing re-asks a
model except :mod:`mtvbench.analysis.sweep`, which starts new runs on purpose.
"""
