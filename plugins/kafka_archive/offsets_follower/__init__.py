"""Consumer-group history read continuously from a live cluster's ``__consumer_offsets``.

Archived segments of ``__consumer_offsets`` cannot hold every commit: the broker's log cleaner
compacts the topic (keeping only the newest commit per group/topic/partition) long before
its segments roll and are archived. :mod:`kafka_archive.offsets_follower.follower` reads the topic
as it is written and stores every commit in the catalog, exactly once; the catalog's
``group-offsets`` merges that history with the one decoded from archived segments.
"""
