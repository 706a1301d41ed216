"""Whole-cluster restores: many topics, their configs, ACLs and consumer groups, at one moment.

The pure parts of a restore (docs/restore.md): the request and its selection and rename rules
(:mod:`.request`), ACLs carried and permissions evaluated (:mod:`.acls`), the preflight
(:mod:`.preflight`), the plan and report (:mod:`.model`), the target's Admin API answers
(:mod:`.target`), and the restore record read back (:mod:`.status`). The orchestration - one
replay per topic through :class:`~kafka_archive.services.replay.ReplayService`, in parallel,
then the groups - is
:class:`kafka_archive.services.restore.RestoreService`.
"""
