"""Everything of the platform that runs on Spark, on top of the domain packages.

* :mod:`.session` - the Spark session (local mode bound to loopback, UI off unless the
  ``spark_ui`` setting is on) and :class:`~.session.SparkRunner`, the catalog build's task
  runner on Spark;
* :mod:`.master` - checking a master URL before starting anything;
* :mod:`.submit_secrets` - Spark settings that hold secrets go to ``spark-submit`` in a 0600
  properties file, never on its command line;
* :mod:`.replay` - a replay's partitions as Spark tasks (``spark_jobs/replay.py`` is the entry
  point on a cluster).

pyspark is imported inside functions only: the package imports without the ``[spark]`` extra.
"""
