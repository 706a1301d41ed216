"""Tests against a real Apache Kafka KRaft cluster (``kafka_cluster`` in support/real_kafka.py)."""
