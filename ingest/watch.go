package ingest

import (
	"context"
	"runtime"
	"time"

	"github.com/quiverdata/quiver/lake"
)

// report builds the report so far.
func (p *Pipeline) report() Report {
	r := Report{
		NumCPU:            runtime.NumCPU(),
		OS:                runtime.GOOS,
		KafkaClients:      p.clients,
		KafkaQueueCap:     p.cfg.QueueMessages,
		ProcessorRoutines: p.cfg.Decoders,
		ArrowQueueCap:     p.cfg.QueueBatches,
		DuckDBThresholdMB: p.cfg.Rotate.MaxBytes >> 20,
		DuckDBConnections: p.cfg.Inserters,
		Start:             p.start,
		Records:           p.records.Load(),
		NormRecords:       p.norm.Load(),
		DeadLetters:       p.dead.Load(),
		Bytes:             p.bytes.Load(),
	}
	if p.schemas.norm != nil {
		r.NormalizerFields = p.schemas.norm.NumFields() - len(metaFields)
	}
	if p.rotator != nil {
		files, bytes, avg := p.rotator.stats()
		r.DuckDBFiles, r.DuckDBFilesMB, r.FileAvgDuration = files, bytes>>20, avg
	}
	if n := p.firstMsg.Load(); n != 0 {
		r.firstDelivery = time.Unix(0, n)
	}
	if n := p.lastCommit.Load(); n != 0 {
		r.lastCommit = time.Unix(0, n)
	}
	r.finish(time.Now())
	return r
}

// reportLoop logs a report every ReportInterval.
func (p *Pipeline) reportLoop(ctx context.Context) {
	if p.cfg.ReportInterval < 0 {
		return
	}
	t := time.NewTicker(p.cfg.ReportInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r := p.report()
			recordsPerSecond.Set(r.RecordsPerSecond)
			totalRowsPerSecond.Set(r.TotalRowsPerSecond)
			transferRate.Set(r.TransferRate)
			p.log.Info("ingest report", r.Attrs()...)
			if p.cfg.OnReport != nil {
				p.cfg.OnReport(r)
			}
		case <-ctx.Done():
			return
		}
	}
}

// idleLoop stops the source once no message has arrived for IdleExit.
// Before the first message it waits at least idleGrace, so that joining
// the consumer group is not taken for idleness.
func (p *Pipeline) idleLoop(ctx context.Context, stopSrc context.CancelCauseFunc) {
	t := time.NewTicker(min(p.cfg.IdleExit/4+time.Millisecond, time.Second))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if p.paused.Load() {
				p.lastMsg.Store(time.Now().UnixNano())
				continue
			}
			limit := p.cfg.IdleExit
			if p.firstMsg.Load() == 0 {
				limit = max(limit, idleGrace)
			}
			if time.Since(time.Unix(0, p.lastMsg.Load())) >= limit {
				p.log.Info("no message for the idle-exit interval; stopping", "idle_exit", p.cfg.IdleExit)
				stopSrc(errIdle)
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// diskGuard is the guard over the pipeline's files.
func (p *Pipeline) diskGuard() lake.DiskGuard {
	g := lake.DiskGuard{
		Ceiling: p.cfg.DiskCeiling,
		MinFree: p.cfg.MinFreeDisk,
		Paths:   []string{p.cfg.DBPath, p.cfg.DBPath + ".wal", lake.SealedDir(p.cfg.DBPath)},
		FreeOn:  p.cfg.DBPath,
	}
	if p.cfg.ExportDir != "" {
		g.Paths = append(g.Paths, p.cfg.ExportDir)
	}
	return g
}

// checkDisk pauses or resumes consumption as the guard says.
func (p *Pipeline) checkDisk(g lake.DiskGuard) {
	st := g.Check(p.paused.Load())
	switch {
	case st.Over && !p.paused.Load():
		p.log.Warn("pausing consumption: disk limit reached", "reason", st.Reason)
		p.setPaused(true)
	case !st.Over && p.paused.Load():
		p.log.Info("resuming consumption", "used_MB", st.Used>>20, "free_MB", st.Free>>20)
		p.setPaused(false)
	}
}

// diskLoop checks the disk every two seconds (Run checks once before the
// source starts).
func (p *Pipeline) diskLoop(ctx context.Context) {
	g := p.diskGuard()
	if !g.Enabled() {
		return
	}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.checkDisk(g)
		case <-ctx.Done():
			p.setPaused(false)
			return
		}
	}
}

func (p *Pipeline) setPaused(v bool) {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	if p.paused.Swap(v) == v {
		return
	}
	if v {
		pausedGauge.Set(1)
	} else {
		pausedGauge.Set(0)
		close(p.resumed)
		p.resumed = make(chan struct{})
	}
}
