package ingest

import (
	"context"
	"sync"
)

// sequencer orders commits: batch n commits only after batch n-1 did, so
// what DuckDB holds is always a prefix of what the source delivered. It
// also lets Flush wait for a batch to be committed.
type sequencer struct {
	mu   sync.Mutex
	done uint64        // highest committed batch
	err  error         // set once a commit failed; nothing commits after
	wake chan struct{} // closed and replaced on every change
}

func newSequencer() *sequencer { return &sequencer{wake: make(chan struct{})} }

// wait blocks until batch seq is committed (seq 0 is committed from the
// start) or a commit has failed.
func (s *sequencer) wait(ctx context.Context, seq uint64) error {
	for {
		s.mu.Lock()
		done, err, wake := s.done, s.err, s.wake
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if done >= seq {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// finish records that batch seq has committed.
func (s *sequencer) finish(seq uint64) {
	s.mu.Lock()
	s.done = seq
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// fail stops all further commits.
func (s *sequencer) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		close(s.wake)
		s.wake = make(chan struct{})
	}
	s.mu.Unlock()
}

// committed returns the highest committed batch.
func (s *sequencer) committed() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}
