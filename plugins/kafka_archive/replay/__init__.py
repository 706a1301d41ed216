"""Replay: re-produce any archived range of a topic into a target cluster, exactly once.

Public entry points (see docs/replay.md):

* :func:`~kafka_archive.replay.plan.build_plan` / :class:`~kafka_archive.replay.plan.ReplaySpec`
  / :class:`~kafka_archive.replay.plan.ReplayPlan` / :class:`~kafka_archive.replay.plan.PlanSource`
  - what to replay, resolved against the catalog;
* :class:`~kafka_archive.replay.reader.PartitionReader` - committed records of one partition;
* :class:`~kafka_archive.replay.engine.PartitionReplay` - one partition, transactional, resumable;
* :func:`~kafka_archive.replay.runner.check_target` / :func:`~kafka_archive.replay.runner.execute`
  - guard rails and in-process execution (Spark: ``spark_jobs/replay.py``);
* :func:`~kafka_archive.replay.groups.translate_group` - consumer-group positions on the target.

Submodules are imported lazily by their users; this package imports nothing heavy.
"""
