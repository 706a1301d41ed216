"""The store and the catalog the settings name, opened once per service and closed with it.

:class:`Resources` is what every service holds: the effective :class:`~kafka_archive.settings.
Settings` and, opened on first use, the object store and the catalog. A setting a call needs
but nobody gave is a :class:`MissingSetting` naming the option, the environment variable and
the Airflow Variable that would give it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from kafka_archive.settings import SETTINGS, Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.store.base import ObjectStore

__all__ = ["MissingSetting", "ResourceService", "Resources"]

_OPTION = {"store": "--store URI", "db": "--db PATH_OR_URL"}


class MissingSetting(SettingsError):
    """A call needs a setting that no source gives."""

    def __init__(self, name: str) -> None:
        spec = next(s for s in SETTINGS if s.name == name)
        option = _OPTION.get(name)
        given_by = f"pass {option} or set {spec.env}" if option else f"set {spec.env}"
        super().__init__(
            f"no {_WHAT.get(name, name)} given",
            hint=f"{given_by} (or the Airflow Variable {spec.variable}, or `{spec.key}` in the "
            "file named by KAFKA_ARCHIVE_CONFIG)",
        )
        self.name = name


_WHAT = {"store": "archive store", "db": "catalog"}


class Resources:
    """The settings plus the store and the catalog they name (opened lazily, closed by
    :meth:`close` or the ``with`` block). Not thread-safe: one per request or task."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        catalog: Catalog | None = None,
        store: ObjectStore | None = None,
    ) -> None:
        """``catalog``/``store``: already open handles to use (and close) instead of opening
        the ones the settings name (an adapter that opened them to report its own errors)."""
        self.settings = settings if settings is not None else load_settings()
        self._store = store
        self._catalog = catalog

    def require(self, name: str) -> str:
        """The value of setting ``name``, or :class:`MissingSetting`."""
        value = getattr(self.settings, name)
        if not value:
            raise MissingSetting(name)
        return str(value)

    @property
    def has_store(self) -> bool:
        return self._store is not None or bool(self.settings.store)

    def store(self, **options: Any) -> ObjectStore:
        """The archive store (``store`` setting); ``options`` are the store's own
        (e.g. ``sse``), used on the first call only."""
        if self._store is None:
            from kafka_archive.store import open_store

            self._store = open_store(self.require("store"), **options)
        return self._store

    def catalog(self, *, create: bool = False) -> Catalog:
        """The catalog (``db`` setting), its schema brought to the newest revision. ``create``
        only for writers (a build, the offsets follower): readers never create a catalog."""
        if self._catalog is None:
            from kafka_archive.catalog.db import open_catalog

            self._catalog = open_catalog(self.require("db"), create=create)
        return self._catalog

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class ResourceService:
    """The base of the services: their :class:`Resources`, closed by :meth:`close` or the
    ``with`` block. Not thread-safe: one service per request, command or task."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        catalog: Catalog | None = None,
        store: ObjectStore | None = None,
    ) -> None:
        """``settings``: the effective ones when ``None``; ``catalog``/``store``: already open
        handles to use (and close) instead of the ones the settings name."""
        self.resources = Resources(settings, catalog=catalog, store=store)

    def close(self) -> None:
        self.resources.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
