"""The catalog's answers, for the CLI's query commands and the UI's JSON API.

:class:`CatalogQueryService` opens the catalog (never creating one: a mistyped location is
"no catalog at PATH", not an empty answer) and, where a question reads archived bytes, the
store, from the settings; every method is one question, returning the catalog package's
answer objects (each has ``to_json()``, the form ``--json`` prints and the API returns).

Errors: :class:`~kafka_archive.settings.SettingsError` (nothing names the catalog or the store
a question needs), :class:`~kafka_archive.catalog.db.CatalogError` (the catalog cannot be
opened), :class:`~kafka_archive.catalog.queries.CatalogQueryError` (the question has no answer,
e.g. an unknown topic), :class:`~kafka_archive.store.StoreError` and
:class:`~segment_lib.errors.SegmentError` (an exact answer needed archived bytes that could not
be read), each with a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafka_archive.services.resources import ResourceService

if TYPE_CHECKING:
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.catalog.gaps import GapEntry
    from kafka_archive.catalog.holdings import ClusterHoldings, PartitionHoldings
    from kafka_archive.catalog.queries import GroupCommit, GroupOffset, Location, StatsBucket
    from kafka_archive.catalog.time_answers import TimeAnswer
    from kafka_archive.catalog.verify import VerifyReport

__all__ = ["CatalogQueryService"]


class CatalogQueryService(ResourceService):
    """Questions to the catalog of :attr:`resources` (see the module docstring).

    Not thread-safe (one per request or command); close it, or use it as a context manager.
    """

    @property
    def catalog(self) -> Catalog:
        return self.resources.catalog()

    def offsets(
        self,
        cluster: str,
        topic: str,
        at_ms: int,
        partitions: Sequence[int] | None = None,
        *,
        exact: bool | None = None,
    ) -> list[TimeAnswer]:
        """Per partition, the first offset whose timestamp is >= ``at_ms`` (Kafka's
        ListOffsets answer). ``exact``: read the one interval per partition from the store
        (default: when a store is configured); otherwise the catalog's range alone."""
        from kafka_archive.catalog.time_answers import offsets_at

        use_store = self.resources.has_store if exact is None else exact
        store = self.resources.store() if use_store else None
        return offsets_at(self.catalog, store, cluster, topic, at_ms, partitions)

    def locate(self, cluster: str, topic: str, partition: int, offset: int) -> Location:
        """Where ``offset`` lives: the object, its byte range, the record's timestamp."""
        from kafka_archive.catalog.queries import locate

        return locate(self.catalog, self.resources.store(), cluster, topic, partition, offset)

    def stats(
        self,
        cluster: str,
        topic: str,
        start_ms: int,
        end_ms: int,
        bucket_ms: int,
        partitions: Sequence[int] | None = None,
    ) -> list[StatsBucket]:
        """Records and bytes per time bucket over ``[start_ms, end_ms)``: whole minutes from
        the catalog's histogram; any other whole number of seconds from the archived batches
        (needs the store; :func:`~kafka_archive.catalog.queries.stats.fine_stats`)."""
        from kafka_archive.catalog.constants import DEFAULT_HISTOGRAM_MS
        from kafka_archive.catalog.queries.stats import fine_stats, stats

        if bucket_ms % DEFAULT_HISTOGRAM_MS == 0:
            return stats(self.catalog, cluster, topic, start_ms, end_ms, bucket_ms, partitions)
        store = self.resources.store()
        return fine_stats(
            self.catalog, store, cluster, topic, start_ms, end_ms, bucket_ms, partitions
        )

    def gaps(self, cluster: str, topic: str | None = None) -> list[GapEntry]:
        """Every hole and integrity problem of the archive, with its severity."""
        from kafka_archive.catalog.gaps import gaps

        return gaps(self.catalog, cluster, topic)

    def topics(self, cluster: str) -> list[PartitionHoldings]:
        """What the archive holds of each partition of ``cluster``."""
        from kafka_archive.catalog.holdings import topics

        return topics(self.catalog, cluster)

    def clusters(self) -> list[ClusterHoldings]:
        """Every cluster the catalog knows, with its totals."""
        from kafka_archive.catalog.holdings import clusters

        return clusters(self.catalog)

    def group_offsets(
        self, cluster: str, group: str, at_ms: int | None = None
    ) -> list[GroupOffset]:
        """``group``'s committed position per partition at ``at_ms`` (default: latest)."""
        from kafka_archive.catalog.queries import group_offsets

        return group_offsets(self.catalog, cluster, group, at_ms)

    def group_commits(
        self, cluster: str, group: str, *, from_ms: int | None = None, to_ms: int | None = None
    ) -> list[GroupCommit]:
        """Every commit of ``group`` in ``[from_ms, to_ms]``, in time order."""
        from kafka_archive.catalog.queries import group_commit_history

        return group_commit_history(self.catalog, cluster, group, from_ms=from_ms, to_ms=to_ms)

    def verify(
        self,
        cluster: str,
        *,
        deep: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> VerifyReport:
        """Check every cataloged object of ``cluster`` against the store (``deep``: re-read
        and re-check every batch); what it finds is recorded as integrity problems."""
        from kafka_archive.catalog.verify import verify_catalog

        return verify_catalog(
            self.catalog, self.resources.store(), cluster, deep=deep, progress=progress
        )
