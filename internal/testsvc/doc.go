// Package testsvc starts the real servers integration tests need, as
// processes on 127.0.0.1: SeaweedFS (S3 and an Iceberg REST catalog),
// PostgreSQL, and the quiver binary itself. It imports nothing of quiver's
// own, so any package's tests may use it.
package testsvc
