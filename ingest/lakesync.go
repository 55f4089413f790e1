package ingest

import (
	"context"
	"fmt"
)

// This file holds what the pipeline does with the lake when the source's
// partitions change hands. See the package documentation, "The lake".

// lakeAssigned settles partitions the source starts consuming: it commits
// what the process still holds of them (left by a crash, or by an earlier
// ownership) unless the lake already moved past it, and makes the lake's
// end offsets their positions, so Stored answers from the lake.
func (p *Pipeline) lakeAssigned(ctx context.Context, topic string, parts []int32) error {
	if _, err := (handler{p}).Flush(ctx); err != nil {
		return fmt.Errorf("flush before assignment: %w", err)
	}
	owned := p.sink.ownedSet()
	tolerant := map[int32]bool{}
	for _, q := range parts {
		owned[q] = true
		tolerant[q] = true
	}
	if err := p.rotator.exportAll(ctx, p.sink.exportFor(owned, tolerant)); err != nil {
		return fmt.Errorf("commit held rows of assigned partitions: %w", err)
	}
	crashPoint("lake-during-assign")
	ends, err := p.sink.ends(ctx)
	if err != nil {
		return fmt.Errorf("read the lake's offsets: %w", err)
	}
	if err := p.store.resetPartitions(ctx, topic, parts, ends); err != nil {
		return err
	}
	p.sink.setOwned(owned)
	p.rotator.unhold()
	p.log.Info("partitions assigned; resuming from the lake", "partitions", parts, "lake_offsets", ends)
	return nil
}

// lakeRelease gives partitions up: on a revocation or a clean stop it
// first commits everything delivered to the lake; when they were lost, or
// that commit fails, their rows are dropped (the next owner consumes them
// again from the lake's offsets). It returns the lake's offsets of parts.
func (p *Pipeline) lakeRelease(ctx context.Context, topic string, parts []int32, commit bool) (Offsets, error) {
	var err error
	if _, ferr := (handler{p}).Flush(ctx); ferr != nil {
		err = fmt.Errorf("flush before release: %w", ferr)
	} else if commit {
		if cerr := p.rotator.exportAll(ctx, p.sink.exportFor(p.sink.ownedSet(), nil)); cerr != nil {
			err = fmt.Errorf("commit released partitions to the lake (their rows are dropped; the next owner consumes them again): %w", cerr)
		}
	}
	owned := p.sink.ownedSet()
	for _, q := range parts {
		delete(owned, q)
	}
	p.sink.setOwned(owned)
	out := Offsets{}
	ends, eerr := p.sink.ends(ctx)
	if eerr != nil && err == nil {
		err = fmt.Errorf("read the lake's offsets: %w", eerr)
	}
	for _, q := range parts {
		if n, ok := ends[q]; ok {
			out.Set(topic, q, n)
		}
	}
	return out, err
}
