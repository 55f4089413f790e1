// Package serveproc runs the quiver binary as a `quiver serve` child
// process on free loopback ports and waits for the listeners it announces
// on stderr ("quiver: flight listening on ADDR"). The benchmarks and the
// tests that need real server processes share it.
package serveproc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
)

// Proc is a `quiver serve` child process.
type Proc struct {
	cmd        *exec.Cmd
	FlightAddr string
	MySQLAddr  string
	log        strings.Builder
}

// Start runs the quiver binary at bin as `serve` on free loopback
// ports with the given database and extra flags, and waits until both
// listeners are announced (MySQL's only when mysql is set).
func Start(ctx context.Context, bin, db string, mysql bool, extra ...string) (*Proc, error) {
	mysqlAddr := ""
	if mysql {
		mysqlAddr = "127.0.0.1:0"
	}
	args := append([]string{"serve", "--db", db, "--flight", "127.0.0.1:0", "--mysql", mysqlAddr, "--http", "", "--log-level", "warn"}, extra...)
	p := &Proc{cmd: exec.CommandContext(ctx, bin, args...)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Cancel = func() error { return p.cmd.Process.Signal(syscall.SIGTERM) }
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.log.WriteString(line + "\n")
			if addr, ok := strings.CutPrefix(line, "quiver: flight listening on "); ok {
				p.FlightAddr = addr
			}
			if addr, ok := strings.CutPrefix(line, "quiver: mysql listening on "); ok {
				p.MySQLAddr = addr
			}
			if p.FlightAddr != "" && (p.MySQLAddr != "" || !mysql) {
				ready <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("server exited before it was ready:\n%s", p.log.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			p.cmd.Wait()
			return nil, err
		}
	case <-time.After(2 * time.Minute):
		p.Stop()
		return nil, fmt.Errorf("server not ready after 2 minutes:\n%s", p.log.String())
	}
	return p, nil
}

// Pid is the server's process id, for reading its CPU time and memory
// from /proc.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// RSS is the server's resident memory in bytes, or 0 when it is gone.
func (p *Proc) RSS() int64 {
	m, _ := osfacts.ProcessMemory(p.cmd.Process.Pid)
	return m.RSS
}

// Stop terminates the server gracefully and waits for it.
func (p *Proc) Stop() {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it.
func (p *Proc) Kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}
