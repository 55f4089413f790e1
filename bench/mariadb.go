package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/quiverdata/quiver/client"
)

// mariadbDDL creates the workload tables with MySQL types.
func mariadbDDL(table string) string {
	var cols []string
	switch table {
	case "num":
		cols = append(cols, "id BIGINT")
		for k := 1; k <= 19; k++ {
			cols = append(cols, fmt.Sprintf("c%d BIGINT", k))
		}
	case "str":
		for k := 1; k <= 20; k++ {
			cols = append(cols, fmt.Sprintf("s%d VARCHAR(32)", k))
		}
	}
	return fmt.Sprintf("DROP TABLE IF EXISTS %s; CREATE TABLE %s (%s) ENGINE=InnoDB", table, table, strings.Join(cols, ", "))
}

// loadMariaDB copies the workload tables from quiver into MariaDB: each is
// exported over Flight as CSV and loaded with LOAD DATA LOCAL INFILE.
func loadMariaDB(ctx context.Context, c *client.Client, dsn, dir string, tables []string) error {
	hostPort, user, pw := splitMariaDB(dsn)
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return fmt.Errorf("--mariadb %q: want HOST:PORT:USER:PASSWORD", dsn)
	}
	for _, table := range tables {
		path := filepath.Join(dir, table+".csv")
		if err := exportCSV(ctx, c, "SELECT * FROM "+table, path); err != nil {
			return err
		}
		sql := mariadbDDL(table) + fmt.Sprintf("; LOAD DATA LOCAL INFILE '%s' INTO TABLE %s FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES", path, table)
		cmd := exec.CommandContext(ctx, "mysql", "--local-infile=1", "-h", host, "-P", port, "-u", user, "-p"+pw, "-D", "quiver_bench", "-e", sql)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("load %s into MariaDB: %v: %s", table, err, bytes.TrimSpace(stderr.Bytes()))
		}
		os.Remove(path)
	}
	return nil
}

func exportCSV(ctx context.Context, c *client.Client, sql, path string) error {
	res, err := c.Query(ctx, sql)
	if err != nil {
		return fmt.Errorf("export %s: %w", sql, err)
	}
	defer res.Release()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := client.NewResultWriter("csv", bw, res.Schema(), 0)
	if err != nil {
		return err
	}
	for res.Next() {
		if err := w.Write(res.RecordBatch()); err != nil {
			return err
		}
	}
	if err := res.Err(); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}
