// Package kafka is the Kafka source of the ingest pipeline, built on
// franz-go. Each of its clients is a consumer-group member: the group
// spreads a topic's partitions over every member of every process that
// runs with the same group name.
//
// Positions come from the pipeline, not from Kafka: when a member is
// assigned partitions it starts each at the offset stored in DuckDB, or at
// Kafka's committed offset when that is further along (another process
// consumed the partition meanwhile), or at the reset offset when neither
// exists. Autocommit is off. Offsets are committed to Kafka only after
// DuckDB has committed them: periodically, before partitions are given up
// (the revoke callback first makes the pipeline commit everything
// delivered), and on shutdown. Rebalances are blocked while a poll is
// being handed to the pipeline, so a revoke never races a delivery.
package kafka
