package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// abortSample is the server's state at one step of the abort test.
type abortSample struct {
	step string
	// streams were opened, firstBatch of them read their first batch;
	// rejected and other failed.
	streams, firstBatch int
	rejected, other     int
	classes             map[string]int
	examples            map[string]string
	rss                 int64
	goroutines          int
	// settled is how long after the round's last stream the sample was
	// read.
	settled time.Duration
}

// abortResult is the abort step: the baseline, then each round.
type abortResult struct {
	parallel int
	base     abortSample
	rounds   []abortSample
	// late is the reading AbortLate after the last round, if any.
	late *abortSample
	// hwm is the server's VmHWM at the end of the step.
	hwm int64
}

// abortStep opens AbortStreams DoGets of AbortRows rows per round, AbortParallel
// at a time over as many Flight connections, reads the first batch of
// each and cancels it, as a client that goes away does. The baseline and
// each round's figures are read with the connections still open, after
// Settle, and once the goroutines are back within 10% of the baseline
// (or 2×Settle more has passed).
func (l *suite) abortStep(ctx context.Context) (*abortResult, error) {
	cfg := l.cfg
	out := &abortResult{parallel: min(cfg.AbortParallel, cfg.AbortStreams)}
	conns := make([]flightConn, out.parallel)
	sem := make(chan struct{}, cfg.LoginParallel)
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := l.target.dial(ctx, protoFlight, nil)
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = c.(flightConn)
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c.c != nil {
				c.close()
			}
		}
	}()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("abort step: connect: %w", err)
		}
	}

	sleepCtx(ctx, cfg.Settle)
	var err error
	out.base = abortSample{step: "baseline"}
	out.base.rss, _ = l.srv.memory()
	if out.base.goroutines, err = l.srv.goroutines(ctx); err != nil {
		return nil, err
	}
	l.log.Info("load: abort baseline", "rss_mb", out.base.rss>>20, "goroutines", out.base.goroutines)
	for r := 1; r <= cfg.AbortRounds; r++ {
		s := l.abortRound(ctx, conns)
		s.step = fmt.Sprintf("round %d", r)
		done := time.Now()
		sleepCtx(ctx, cfg.Settle)
		deadline := time.Now().Add(2 * cfg.Settle)
		for {
			if s.goroutines, err = l.srv.goroutines(ctx); err != nil {
				return nil, err
			}
			if within(s.goroutines, out.base.goroutines, 0.10, 0) || !time.Now().Before(deadline) {
				break
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
		s.rss, _ = l.srv.memory()
		s.settled = time.Since(done)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l.log.Info("load: abort round", "round", r, "first_batches", s.firstBatch, "errors", s.other,
			"rss_mb", s.rss>>20, "goroutines", s.goroutines)
		out.rounds = append(out.rounds, s)
	}
	if cfg.AbortLate > 0 {
		sleepCtx(ctx, cfg.AbortLate)
		s := abortSample{step: fmt.Sprintf("+%v", cfg.AbortLate), settled: cfg.AbortLate}
		if len(out.rounds) > 0 {
			s.settled += out.rounds[len(out.rounds)-1].settled
		}
		if s.goroutines, err = l.srv.goroutines(ctx); err != nil {
			return nil, err
		}
		s.rss, _ = l.srv.memory()
		out.late = &s
	}
	return out, nil
}

// abortRound runs one round's streams over conns.
func (l *suite) abortRound(ctx context.Context, conns []flightConn) abortSample {
	s := abortSample{classes: map[string]int{}, examples: map[string]string{}}
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	sql := l.q.fetchN(l.cfg.AbortRows)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(l.cfg.AbortStreams) && ctx.Err() == nil {
				got, err := abandon(ctx, c, sql)
				mu.Lock()
				s.streams++
				if got {
					s.firstBatch++
				}
				if err != nil && ctx.Err() == nil {
					class, rejected := errClass(protoFlight, err)
					if rejected {
						s.rejected++
					} else {
						s.other++
					}
					s.classes[class]++
					if _, ok := s.examples[class]; !ok {
						s.examples[class] = firstLine(err.Error())
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return s
}

// abandon opens a stream of sql, reads its first batch and cancels it.
func abandon(ctx context.Context, c flightConn, sql string) (bool, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res, err := c.c.Query(sctx, sql)
	if err != nil {
		return false, err
	}
	got := res.Next()
	err = res.Err()
	cancel()
	res.Release()
	if !got && err == nil {
		err = fmt.Errorf("stream ended before its first batch")
	}
	return got, err
}
