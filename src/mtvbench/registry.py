"""Named registries: one mechanism for model backends, local-model families, analyses and
construction stages.

A :class:`Registry` maps names to entries. Rules (the same for every registry):

- **A name is taken once.** Adding a name that is already there raises
  :class:`DuplicateNameError`, for built-ins, :func:`Registry.register` calls and entry points
  alike; nothing is silently replaced.
- **Entries load lazily.** An entry given as ``"package.module:attr"`` is imported the first time
  it is looked up, so optional dependencies (torch, vLLM, the Gemini SDK) are imported only when
  their entry is used. Listing the names imports nothing.
- **Outside packages add entries through Python entry points.** A registry created with
  ``group="mtvbench.backends"`` also holds every entry point of that group of the installed
  distributions (``[project.entry-points."mtvbench.backends"]`` in their ``pyproject.toml``);
  they are listed like built-ins and loaded on first use.
- **Unknown names get a suggestion.** :meth:`Registry.get` raises :class:`UnknownNameError` with
  "did you mean ...?" from the known names (:meth:`Registry.suggest`).

Entries are checked when they load: ``coerce`` (given by the owner of the registry) turns what a
module or entry point provides into the entry type, or raises ``TypeError`` with what is wrong.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar, cast

from mtvbench.errors import MtvbenchError

T = TypeVar("T")


class RegistryError(MtvbenchError):
    """An entry that cannot be added or loaded (a plugin's mistake, not the user's input)."""


class DuplicateNameError(RegistryError, ValueError):
    """A name given twice to one registry."""


class UnknownNameError(RegistryError, KeyError):
    """A name no entry has; the message lists suggestions."""

    def __str__(self) -> str:  # KeyError would quote the message
        return MtvbenchError.__str__(self)


@dataclass
class _Slot:
    #: the loaded entry, or None while it is still a reference
    value: Any = None
    #: ``module:attr`` or an entry point, loaded on first use
    ref: str | EntryPoint | None = None
    #: where the name came from, for messages (``built-in``, ``entry point of PKG``, a module)
    origin: str = "built-in"
    loading: bool = False


def load_reference(ref: str) -> Any:
    """The object ``"package.module:attr"`` names (``attr`` may be dotted)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise RegistryError(f"{ref!r} is not a reference of the form 'package.module:attribute'")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RegistryError(f"{ref!r}: module {module_name} has no attribute {attr!r}") from None
    return obj


def _module_of(ref: str | EntryPoint | None) -> str | None:
    if ref is None:
        return None
    return (ref.value if isinstance(ref, EntryPoint) else ref).partition(":")[0].strip()


def _ep_origin(ep: EntryPoint) -> str:
    dist = getattr(getattr(ep, "dist", None), "name", None)
    return f"the entry point {ep.value!r} of {dist or 'an installed package'}"


class Registry(Generic[T]):
    """Names -> entries of one kind (see the module docstring for the rules).

    ``kind`` names the entries in messages (``"model backend"``); ``group`` is the entry-point
    group outside packages use; ``coerce`` turns a loaded object into an entry (or raises
    ``TypeError``)."""

    def __init__(self, kind: str, *, group: str | None = None, coerce: Callable[[Any], T] | None = None):
        self.kind = kind
        self.group = group
        self._coerce = coerce
        self._slots: dict[str, _Slot] = {}
        self._entry_points_read = group is None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ adding
    def add(self, name: str, entry: T | str, *, origin: str = "built-in") -> None:
        """Add ``entry`` under ``name``; a ``str`` entry is a lazy ``"module:attr"`` reference."""
        with self._lock:
            self._read_entry_points()
            self._put(name, entry, origin)

    def _put(self, name: str, entry: Any, origin: str) -> None:
        if not name or name != name.strip():
            raise RegistryError(f"{self.kind} name {name!r}: must be non-empty, without surrounding spaces")
        slot = self._slots.get(name)
        if slot is not None:
            if not isinstance(entry, (str, EntryPoint)) and (slot.loading or _module_of(slot.ref) == origin):
                # the module a reference names registers the name itself (while it is loaded, or imported first)
                slot.value, slot.ref = self._checked(name, entry), None
                return
            if slot.ref is None and slot.value is entry:
                return  # the same object again (a module imported twice)
            raise DuplicateNameError(f"{self.kind} {name!r} is registered twice: by {slot.origin} and by {origin}",
                                     hint="choose another name for one of them")
        if isinstance(entry, (str, EntryPoint)):
            self._slots[name] = _Slot(ref=entry, origin=origin)
        else:
            self._slots[name] = _Slot(value=self._checked(name, entry), origin=origin)

    def register(self, name: str) -> Callable[[Any], Any]:
        """Decorator: ``@REGISTRY.register("name")`` adds the decorated object (returned unchanged)."""

        def deco(obj: Any) -> Any:
            self.add(name, obj, origin=getattr(obj, "__module__", None) or "a register() call")
            return obj

        return deco

    # ------------------------------------------------------------------ looking up
    def get(self, name: str) -> T:
        """The entry called ``name`` (loaded now if it is a reference); :class:`UnknownNameError` if none."""
        with self._lock:
            self._read_entry_points()
            slot = self._slots.get(name)
            if slot is None:
                raise UnknownNameError(self.unknown_message(name))
            if slot.ref is not None:
                self._load(name, slot)
            return cast(T, slot.value)

    def _load(self, name: str, slot: _Slot) -> None:
        ref = slot.ref
        slot.loading = True
        try:
            obj = ref.load() if isinstance(ref, EntryPoint) else load_reference(str(ref))
        except MtvbenchError:
            raise  # a missing optional dependency names its extra itself
        except Exception as e:  # noqa: BLE001 - an entry that fails to import is one clear message
            raise RegistryError(f"{self.kind} {name!r} ({slot.origin}) failed to load: {type(e).__name__}: {e}"
                                ) from e
        finally:
            slot.loading = False
        if slot.ref is not None:  # the module did not register the name itself while loading
            slot.value, slot.ref = self._checked(name, obj), None

    def _checked(self, name: str, obj: Any) -> T:
        if self._coerce is None:
            return cast(T, obj)
        try:
            return self._coerce(obj)
        except TypeError as e:
            raise RegistryError(f"{self.kind} {name!r}: {e}") from None

    def __contains__(self, name: object) -> bool:
        with self._lock:
            self._read_entry_points()
            return name in self._slots

    def names(self) -> list[str]:
        """Every name, built-ins first in the order they were added, then entry points (nothing is loaded)."""
        with self._lock:
            self._read_entry_points()
            return list(self._slots)

    def items(self) -> Iterator[tuple[str, T]]:
        """(name, entry) for every name, loading each entry."""
        for name in self.names():
            yield name, self.get(name)

    def origin(self, name: str) -> str:
        """Where the entry ``name`` was added (a module, or an entry point of a package), as messages name it."""
        with self._lock:
            self._read_entry_points()
            return self._slots[name].origin

    def suggest(self, name: str, n: int = 3) -> list[str]:
        """Up to ``n`` names close to ``name`` (for "did you mean")."""
        return difflib.get_close_matches(name, self.names(), n=n, cutoff=0.6)

    def unknown_message(self, name: str) -> str:
        """The message for a name no entry has: the closest names, else every name."""
        close = self.suggest(name)
        hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else "known: " + ", ".join(self.names())
        return f"unknown {self.kind} {name!r} ({hint})"

    # ------------------------------------------------------------------ entry points
    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        for ep in entry_points(group=str(self.group)):
            self._put(ep.name, ep, _ep_origin(ep))

    def refresh_entry_points(self) -> None:
        """Read the entry-point group again (after a package was installed into a running process)."""
        with self._lock:
            self._entry_points_read = True
            for ep in entry_points(group=str(self.group)) if self.group else ():
                if ep.name not in self._slots:
                    self._put(ep.name, ep, _ep_origin(ep))

__all__ = ["DuplicateNameError", "Registry", "RegistryError", "UnknownNameError", "load_reference"]
