"""Moved: the tables users give are read by :mod:`mtvbench.util.rowfiles` (``tables`` names the tables mtvbench
prints, :mod:`mtvbench.render.tables`). The names work from here for one release, with a DeprecationWarning."""

from mtvbench.util.moved import moved_names

__getattr__ = moved_names(__name__, dict.fromkeys(("csv_records", "record_keys"), "mtvbench.util.rowfiles"))
