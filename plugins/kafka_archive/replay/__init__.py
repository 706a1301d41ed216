"""Replay: re-produce any archived range of a topic into a target cluster, exactly once.

Public entry points (see docs/replay.md):

* :func:`~kafka_archive.replay.planning.plan.build_plan` /
  :class:`~kafka_archive.replay.planning.plan.ReplaySpec` /
  :class:`~kafka_archive.replay.planning.plan.ReplayPlan` /
  :class:`~kafka_archive.replay.planning.plan.PlanSource`
  - what to replay, resolved against the catalog;
* :class:`~kafka_archive.replay.execution.reader.PartitionReader` - committed records of one
  partition;
* :class:`~kafka_archive.replay.execution.engine.PartitionReplay` - one partition, transactional,
  resumable;
* :func:`~kafka_archive.replay.runner.check_target` / :func:`~kafka_archive.replay.runner.execute`
  - guard rails and in-process execution (Spark: ``spark_jobs/replay.py``);
* :func:`~kafka_archive.replay.group_translation.translate_group` - consumer-group positions on the
  target.

Submodules are imported lazily by their users; this package imports nothing heavy.
"""
