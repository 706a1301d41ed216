"""The cluster metadata history: topics, partitions, configs, ACLs, SCRAM users, client quotas
and feature levels of a Kafka cluster at any moment, in the catalog database.

Two sources feed the same tables:

* ``metadata_log``: the KRaft ``__cluster_metadata`` log (snapshots + deltas, in offset order),
  replayed by :mod:`kafka_archive.metadata_history.apply`; every history row keeps the record
  that caused it (Raft offset, record type and version);
* ``admin_snapshot``: periodic snapshots through the Admin API for clusters without a metadata
  log (ZooKeeper-era, or no controller disk access), :mod:`kafka_archive.metadata_history.admin`;
  answers are then at snapshot resolution.

Modules: ``models`` (the tables; revisions in ``migrations/versions``, branch
``metadata_history``), ``entries`` (the shape of the decoded entries consumed), ``state`` (the
pure in-memory state and its changes), ``apply`` (entries -> history rows, resumable),
``queries`` (state at T, history, ACLs, incarnations), ``defaults`` (Kafka's topic config
defaults, for resolved values), ``admin`` (an Admin API snapshot as a state).
"""
