package ingest

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/quiverdata/quiver/ingest/segment"
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
		r.FirstDelivery = time.Unix(0, n)
	}
	if n := p.lastCommit.Load(); n != 0 {
		r.LastCommit = time.Unix(0, n)
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
// the consumer group is not taken for idleness. Partitions changing hands
// start the wait again (see handingOver).
func (p *Pipeline) idleLoop(ctx context.Context, stopSrc context.CancelCauseFunc) {
	t := time.NewTicker(min(p.cfg.IdleExit/4+time.Millisecond, time.Second))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			// Not idle while paused, while a delivery waits for room (the
			// source is held back, not starved), while messages wait to
			// be decoded, or while partitions change hands.
			if p.paused.Load() || p.delivering.Load() > 0 || p.budget.inUse() > 0 || p.handover.Load() > 0 {
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

// handingOver marks an Assigned or Release call under way; the function it
// returns ends it and starts the idle wait again. Partitions changing
// hands are not idleness: the source polls nothing while the pipeline
// commits and takes positions for them, and a partition just assigned has
// not been fetched yet. Its messages may have waited, unowned, for the
// whole rebalance, while this process had nothing to consume; stopping
// before they are fetched would leave them unconsumed.
func (p *Pipeline) handingOver() func() {
	p.handover.Add(1)
	return func() {
		p.lastMsg.Store(time.Now().UnixNano())
		p.handover.Add(-1)
	}
}

// diskGuard is the guard over the pipeline's files.
func (p *Pipeline) diskGuard() segment.DiskGuard {
	g := segment.DiskGuard{
		Ceiling: p.cfg.DiskCeiling,
		MinFree: p.cfg.MinFreeDisk,
		Paths:   []string{p.cfg.DBPath, p.cfg.DBPath + ".wal", segment.SealedDir(p.cfg.DBPath)},
		FreeOn:  p.cfg.DBPath,
	}
	if p.cfg.ExportDir != "" {
		g.Paths = append(g.Paths, p.cfg.ExportDir)
	}
	return g
}

// checkDisk pauses or resumes consumption as the disk guard and, with a
// lake, the backlog of files waiting for it say, and measures the free
// space for Live even when the guard is off.
func (p *Pipeline) checkDisk(g segment.DiskGuard) {
	paused := p.paused.Load()
	var st segment.DiskStatus
	if g.Enabled() {
		st = g.Check(paused)
	} else {
		st.Free = freeBytes(g.FreeOn)
	}
	p.setDiskFree(st.Free)
	over, reason := st.Over, st.Reason
	if p.sink != nil && !over {
		over, reason = p.lakeBehind(paused)
	}
	switch {
	case over && !paused:
		p.log.Warn("pausing consumption", "reason", reason)
		p.setPaused(true)
	case !over && paused:
		p.log.Info("resuming consumption", "used_MB", st.Used>>20, "free_MB", st.Free>>20)
		pausesTotal.Inc()
		p.setPaused(false)
	}
}

// lakeBehind reports whether consumption should pause for the lake: more
// sealed files wait than Config.LakeMaxBacklog, or the lake refuses them
// (the last export failed) while the live file is already due to rotate.
// A paused pipeline resumes once an export succeeded and at most half the
// backlog is left.
func (p *Pipeline) lakeBehind(paused bool) (bool, string) {
	n, lastErr := p.rotator.backlog()
	limit := p.cfg.LakeMaxBacklog
	var why string
	switch {
	case paused && (lastErr != nil || n > limit/2):
		why = fmt.Sprintf("%d sealed files wait for the lake", n)
	case n > limit:
		why = fmt.Sprintf("%d sealed files wait for the lake (at most %d)", n, limit)
	case lastErr != nil && p.rotator.policy.Due(p.store.size(), p.store.age()):
		why = "the live file is due to rotate but the lake refuses the file before it"
	default:
		return false, ""
	}
	if lastErr != nil {
		why += "; the object store or catalog fails: " + lastErr.Error()
	}
	return true, why
}

// diskLoop checks the disk and the lake backlog every two seconds (Run
// checks once before the source starts).
func (p *Pipeline) diskLoop(ctx context.Context) {
	g := p.diskGuard()
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
