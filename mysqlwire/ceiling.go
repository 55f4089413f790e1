package mysqlwire

import (
	"errors"
	"strconv"
	"time"
)

// Some session variables mirror a limit of the server's: the server's
// value is a ceiling, which a session may set lower and never higher. A
// higher value is kept as the server's, as MySQL clamps a value out of a
// variable's range, so SELECT @@x shows the limit that applies.

// ceiling is the server's limit that the session variable name mirrors,
// in the variable's unit; ok is false when it mirrors none, or the
// server sets no limit.
func (s *session) ceiling(name string) (limit int64, ok bool) {
	o := &s.srv.opts
	switch name {
	case "max_execution_time": // milliseconds; --query-timeout
		if o.QueryTimeout > 0 {
			return max(1, int64(o.QueryTimeout/time.Millisecond)), true
		}
	case "wait_timeout", "interactive_timeout": // seconds; --idle-timeout
		return max(1, int64(o.IdleTimeout/time.Second)), true
	case "net_write_timeout":
		return max(1, int64(o.WriteTimeout/time.Second)), true
	case "max_prepared_stmt_count": // --max-prepared
		if h := s.srv.opts.Holds; h != nil {
			return int64(min(h.Limits().Prepared, maxPreparedStatements)), true
		}
		return maxPreparedStatements, true
	case "max_connections":
		if o.MaxConnections > 0 {
			return int64(o.MaxConnections), true
		}
	}
	return 0, false
}

// clampToCeiling returns val, or the server's limit when val is a number
// above the limit that variable name mirrors (see ceiling). Zero and
// negative values, which MySQL reads as "no limit of the session's own"
// or refuses, and values that are no number, are left as they are.
func (s *session) clampToCeiling(name, val string) string {
	limit, ok := s.ceiling(name)
	if !ok {
		return val
	}
	n, err := strconv.ParseInt(val, 10, 64)
	if errors.Is(err, strconv.ErrRange) && val != "" && val[0] != '-' {
		n, err = limit+1, nil
	}
	if err != nil || n <= limit {
		return val
	}
	s.log.Debug("mysql session variable capped at the server's limit", "name", name, "value", val, "limit", limit)
	return strconv.FormatInt(limit, 10)
}
