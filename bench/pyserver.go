package bench

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

// pyServer is a server written in Python, run as a child process that
// prints "listening on HOST:PORT" on stdout once it serves.
type pyServer struct {
	name string
	cmd  *exec.Cmd
	addr string
	// stderr keeps what the server said, for the error when it fails.
	stderr strings.Builder
	done   chan struct{}
}

// startPyServer runs python with args and waits, at most ready, for the
// server's listening line.
func startPyServer(ctx context.Context, name, python string, ready time.Duration, args ...string) (*pyServer, error) {
	s := &pyServer{name: name, cmd: exec.CommandContext(ctx, python, args...), done: make(chan struct{})}
	s.cmd.Cancel = func() error { return s.cmd.Process.Signal(syscall.SIGTERM) }
	s.cmd.WaitDelay = 10 * time.Second
	s.cmd.Stderr = &s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addr <- a
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s.addr = <-addr:
		return s, nil
	case <-s.done:
		s.cmd.Wait()
		return nil, fmt.Errorf("%s exited before it served: %s", name, strings.TrimSpace(s.stderr.String()))
	case <-time.After(ready):
		s.Stop()
		return nil, fmt.Errorf("%s not serving after %s: %s", name, ready, strings.TrimSpace(s.stderr.String()))
	case <-ctx.Done():
		s.Stop()
		return nil, ctx.Err()
	}
}

// Pid is the server's process id.
func (s *pyServer) Pid() int { return s.cmd.Process.Pid }

// CPU is the server's CPU time so far (user and system), 0 when unreadable.
func (s *pyServer) CPU() time.Duration {
	d, _ := osfacts.ProcessCPU(s.Pid())
	return d
}

// Stop asks the server to stop with SIGTERM, and kills it after 10 s.
func (s *pyServer) Stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-exited
	}
}
