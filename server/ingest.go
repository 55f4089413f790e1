package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/quiverdata/quiver/ingest"
)

// IngestPipeline is one Kafka pipeline quiver serve --ingest runs into
// the served database.
type IngestPipeline struct {
	// Name says which pipeline a log line or an error is about: the
	// ingest file and the line its table starts on.
	Name string
	// Config is the pipeline's configuration; Config.DB is set to the
	// served database when the server starts it.
	Config ingest.Config
	// Source delivers the messages.
	Source ingest.Source
}

// ingestShare is the part of the budget's Go memory the pipelines'
// message queues may take together. The budget keeps a third of its Go
// share for everything but open results (admit.SplitBudget); ingest takes
// half of that, so a pipeline never takes memory the open results were
// promised, however far Kafka is ahead.
func ingestShare(goBytes int64) int64 { return goBytes / 6 }

// runningPipeline is a started pipeline and what stops it.
type runningPipeline struct {
	name   string
	p      *ingest.Pipeline
	cancel context.CancelFunc
	done   chan struct{}
}

// startIngest starts the configured pipelines into the served database.
// Ingest takes no admission slot: its batches are not queries, so a burst
// of queries can slow it but never refuses it, and its position lives in
// the database with its rows. Each pipeline's message queue is sized from
// the budget (ingestShare).
func (s *Server) startIngest(ctx context.Context) error {
	if len(s.cfg.Ingest) == 0 {
		return nil
	}
	share := ingestShare(s.Budget.Go) / int64(len(s.cfg.Ingest))
	topics := map[string]string{}
	var started []*runningPipeline
	for _, ip := range s.cfg.Ingest {
		cfg := ip.Config
		cfg.DB = s.DB
		if cfg.Logger == nil {
			cfg.Logger = s.log
		}
		if cfg.QueueBytes == 0 && share > 0 {
			cfg.QueueBytes = max(ingest.MinQueueBytes, share)
		}
		if cfg.MemoryLimit == "" {
			cfg.MemoryLimit = s.cfg.MemoryLimit
		}
		p, err := ingest.New(cfg)
		if err != nil {
			return fmt.Errorf("ingest pipeline %s: %w", ip.Name, err)
		}
		// Positions are kept per topic in one offsets table: two
		// pipelines of one topic would read each other's.
		topic := ip.Name
		if tn, ok := ip.Source.(ingest.TopicNamer); ok {
			topic = tn.Topic()
		}
		if other, ok := topics[topic]; ok {
			return fmt.Errorf("ingest pipeline %s: topic %s is already consumed by pipeline %s; a served database holds one pipeline per topic", ip.Name, topic, other)
		}
		topics[topic] = ip.Name
		started = append(started, &runningPipeline{name: ip.Name, p: p, done: make(chan struct{})})
	}
	for i, rp := range started {
		src := s.cfg.Ingest[i].Source
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		rp.cancel = cancel
		log := s.log.With("pipeline", rp.name)
		go func() {
			defer close(rp.done)
			rep, err := rp.p.Run(rctx, src)
			log.Info("ingest pipeline stopped", rep.Attrs()...)
			if err != nil && !errors.Is(err, context.Canceled) {
				// The server goes on serving: the console's ingest view
				// and the log say the pipeline stopped, and why.
				log.Error("ingest pipeline failed; restart the server to resume it from its stored offsets", "err", err)
			}
		}()
		s.pipeMu.Lock()
		s.pipelines = append(s.pipelines, rp)
		s.pipeMu.Unlock()
		s.stops = append(s.stops, namedStop{"ingest " + rp.name, func(ctx context.Context) {
			rp.cancel()
			select {
			case <-rp.done:
			case <-ctx.Done():
				// Run drains within its own shutdown timeout; the
				// database must not close under it.
				<-rp.done
			}
		}})
	}
	s.log.Info("ingest pipelines started", "count", len(started), "queue_bytes_each", share)
	return nil
}

// IngestLive returns the console's view of every pipeline the server
// runs, in the order of the ingest file.
func (s *Server) IngestLive() []PipelineLive {
	s.pipeMu.Lock()
	ps := s.pipelines
	s.pipeMu.Unlock()
	out := make([]PipelineLive, 0, len(ps))
	for _, rp := range ps {
		pl := PipelineLive{Name: rp.name, Live: rp.p.Live()}
		select {
		case <-rp.done:
			pl.Stopped = true
		default:
		}
		out = append(out, pl)
	}
	return out
}

// PipelineLive is one pipeline in the console's ingest view.
type PipelineLive struct {
	Name    string            `json:"name"`
	Stopped bool              `json:"stopped"`
	Live    ingest.LiveStatus `json:"live"`
}

// ingestLive is the console's hook for IngestLive, nil when the server
// runs no pipeline.
func (s *Server) ingestLive() func() any {
	if len(s.cfg.Ingest) == 0 {
		return nil
	}
	return func() any { return s.IngestLive() }
}
