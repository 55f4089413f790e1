package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/scrape"
)

// adminUser is the admin the load suite's server creates from
// QUIVER_PASSWORD in an empty users file (see quiver serve --users-file).
const adminUser = "admin"

// server is the load suite's `quiver serve` child: authentication on
// (a users file whose first admin gets a random password), the HTTP
// endpoint on for /metrics, and restartable on the addresses it first
// got, so that clients reconnect to the same place after a restart.
//
// Its methods may be called from several goroutines.
type server struct {
	bin      string
	nice     int // the nice value it runs at; 0: the bench's own
	db       string
	users    string
	password string
	// extra are the caller's flags, after the suite's own so they win.
	extra []string

	mu                      sync.Mutex
	cmd                     *exec.Cmd
	exited                  chan struct{} // closed when cmd has exited
	flight, mysql, httpAddr string
	log                     *lineTail
	startedAt               time.Time
}

// startServer starts the server on free loopback ports.
func startServer(ctx context.Context, bin string, nice int, dir, password string, extra []string) (*server, error) {
	s := &server{
		bin: bin, nice: nice, db: dir + "/load.duckdb", users: dir + "/users", password: password, extra: extra,
		flight: "127.0.0.1:0", mysql: "127.0.0.1:0", httpAddr: "127.0.0.1:0",
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// start runs the process on s's addresses and waits until its three
// listeners are announced.
func (s *server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{"serve", "--db", s.db, "--users-file", s.users,
		"--flight", s.flight, "--mysql", s.mysql, "--http", s.httpAddr, "--log-level", "warn"}
	args = append(args, s.extra...)
	cmd := exec.Command(s.bin, args...)
	if s.nice != 0 {
		cmd = exec.Command("nice", append([]string{"-n", strconv.Itoa(s.nice), s.bin}, args...)...)
	}
	cmd.Env = append(os.Environ(), "QUIVER_PASSWORD="+s.password)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s serve: %w", s.bin, err)
	}
	log := newLineTail(200)
	exited := make(chan struct{})
	addrs := make(chan [2]string, 8)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			log.add(line)
			if rest, ok := strings.CutPrefix(line, "quiver: "); ok {
				if proto, addr, ok := strings.Cut(rest, " listening on "); ok {
					addrs <- [2]string{proto, addr}
				}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(exited)
	}()
	var flight, mysql, httpAddr string
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	for flight == "" || mysql == "" || httpAddr == "" {
		select {
		case a := <-addrs:
			switch a[0] {
			case "flight":
				flight = a[1]
			case "mysql":
				mysql = a[1]
			case "http":
				httpAddr = a[1]
			}
		case <-exited:
			return fmt.Errorf("server exited before it was ready:\n%s", log.String())
		case <-timeout.C:
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("server not ready after 2 minutes:\n%s", log.String())
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return ctx.Err()
		}
	}
	s.cmd, s.exited, s.log, s.startedAt = cmd, exited, log, time.Now()
	s.flight, s.mysql, s.httpAddr = flight, mysql, httpAddr
	return nil
}

// addrs returns the Flight and MySQL addresses.
func (s *server) addrs() (flight, mysql string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flight, s.mysql
}

// pid is the current process's id.
func (s *server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// stop sends SIGTERM, which drains running streams for the server's
// --drain, and waits for the process; after wait it kills it.
func (s *server) stop(wait time.Duration) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(wait):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("server did not stop within %v of SIGTERM; killed:\n%s", wait, s.logTail())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("server exited with status %d after SIGTERM:\n%s", code, s.logTail())
	}
	return nil
}

// restart stops the server with SIGTERM (it drains for its --drain) and
// starts it again on the same addresses. It returns when SIGTERM was sent
// and when the new process was ready; gone, when not nil, is told when
// the old process has exited, before the new one starts.
func (s *server) restart(ctx context.Context, wait time.Duration, gone func(time.Time)) (term, ready time.Time, err error) {
	term = time.Now()
	if err := s.stop(wait); err != nil {
		return term, time.Time{}, fmt.Errorf("restart: %w", err)
	}
	if gone != nil {
		gone(time.Now())
	}
	if err := s.start(ctx); err != nil {
		return term, time.Time{}, fmt.Errorf("restart: %w", err)
	}
	return term, time.Now(), nil
}

// memory returns the server's resident set (VmRSS) and its peak over the
// process's life (VmHWM), in bytes, or zeros when the process is gone.
func (s *server) memory() (rss, hwm int64) {
	m, _ := osfacts.ProcessMemory(s.pid())
	return m.RSS, m.Peak
}

// goroutines reads go_goroutines from the server's /metrics.
func (s *server) goroutines(ctx context.Context) (int, error) {
	s.mu.Lock()
	addr := s.httpAddr
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The server has users, so its /metrics asks for a login.
	f, err := scrape.PageAs(ctx, "http://"+addr+"/metrics", adminUser, s.password)
	if err != nil {
		return 0, fmt.Errorf("read server metrics: %w", err)
	}
	n, ok := f.Value("go_goroutines", nil)
	if !ok {
		return 0, errors.New("server metrics have no go_goroutines")
	}
	return int(n), nil
}

func (s *server) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// rssSampler reads the server's VmRSS every interval and keeps the peak,
// following the server across restarts.
type rssSampler struct {
	srv  *server
	once sync.Once
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

// sampleRSS starts sampling; call rssSampler.end to stop and read the peak.
func (s *server) sampleRSS(every time.Duration) *rssSampler {
	r := &rssSampler{srv: s, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			rss, _ := s.memory()
			r.mu.Lock()
			r.peak = max(r.peak, rss)
			r.mu.Unlock()
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// end stops the sampler and returns the peak VmRSS it saw. Calls after
// the first return the same peak.
func (r *rssSampler) end() int64 {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	return r.peak
}

// lineTail keeps the last lines of a process's output, for errors.
type lineTail struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func newLineTail(n int) *lineTail { return &lineTail{n: n} }

func (l *lineTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if len(l.lines) > l.n {
		l.lines = l.lines[len(l.lines)-l.n:]
	}
}

func (l *lineTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
