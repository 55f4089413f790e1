// Package bench runs quiver's benchmark suites from outside the product:
// the published tables, reproduced on the machine they run on, with
// quiver run as a child process (or in-process where the suite times the
// engine alone). The load harness is bench/load, the Kafka pipeline's
// stages bench/stages, and what every suite shares (statistics, tables,
// JSON and plots) bench/report.
package bench
