"""Moved: the dispatcher protocol and its pipeline are :mod:`mtvbench.dispatch`, the local executor
:mod:`mtvbench.dispatch.local` (``LocalDispatcher``). The names that kept their meaning work from
here for one release, with a DeprecationWarning."""

from mtvbench.util.moved import moved_names

_DISPATCH = "mtvbench.dispatch"
_LOCAL = "mtvbench.dispatch.local"

__getattr__ = moved_names(__name__, {"CallGate": _LOCAL, "default_decode_workers": _LOCAL, "DialogueTurns": _DISPATCH,
                                     "VideoJob": _DISPATCH, "NotSent": _DISPATCH})
