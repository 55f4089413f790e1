package console

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	statementsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_console_statements_total",
		Help: "Statements run from the web console, by outcome (ok, or the error's code: sql, denied, busy, timeout, canceled, …).",
	}, []string{"outcome"})
	rowsSent = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_console_rows_sent_total",
		Help: "Result rows the web console sent, downloads included.",
	})
	loginsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_console_logins_total",
		Help: "Web console logins, by result (ok, failed, limited).",
	}, []string{"result"})
)
