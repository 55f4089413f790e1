package bench

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"

	"github.com/quiverdata/quiver/bench/report"
)

// mysqlCLI times `mysql --quick -e SQL > /dev/null`, the MySQL
// protocol client, against addr.
func mysqlCLI(name, addr, user, password, db, sql string, rows int64) report.Contender {
	return report.Contender{Name: name, Run: func() (report.Sample, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return report.Sample{}, fmt.Errorf("mysql address %q: %w", addr, err)
		}
		args := []string{"--quick", "--batch", "-h", host, "-P", port, "-D", db, "-e", sql}
		if user != "" {
			args = append(args, "-u", user)
		}
		if password != "" {
			args = append(args, "-p"+password)
		}
		return report.Timed(func() (int64, int64, error) {
			cmd := exec.Command("mysql", args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return 0, 0, fmt.Errorf("mysql --quick: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
			}
			return 0, rows, nil
		})
	}}
}
