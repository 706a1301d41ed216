"""``python -m kafka_archive_dev``: the same as the ``kafka-archive-dev`` command."""

from kafka_archive_dev.cli import main

main()
