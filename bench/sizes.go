package bench

import (
	"fmt"
	"strings"
)

// ParseSizes reads "1M,5M,10M"-style row counts.
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.ToUpper(part))
		if part == "" {
			continue
		}
		mult := int64(1)
		switch {
		case strings.HasSuffix(part, "M"):
			mult, part = 1_000_000, strings.TrimSuffix(part, "M")
		case strings.HasSuffix(part, "K"):
			mult, part = 1_000, strings.TrimSuffix(part, "K")
		}
		var n int64
		if _, err := fmt.Sscan(part, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q: use e.g. 1M,5M,10M", part)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes given")
	}
	return out, nil
}
