"""Kafka's protocol where the platform needs its raw bytes: kafka-python's connections and
request classes (:mod:`.client`), the settings mapping from librdkafka's names (:mod:`.config`)
and a transactional producer of pre-built record batches (:mod:`.transactions`)."""
