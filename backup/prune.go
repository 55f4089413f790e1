package backup

import (
	"context"
	"errors"
	"fmt"
)

// Prune keeps the newest keep complete backups and removes the older
// ones, and the incomplete backups older than the newest complete one
// (interrupted: with one server backing up to a location, nothing older
// than its last complete backup is still being written). It returns the
// IDs it removed. A keep below 1 removes nothing.
func (s *Store) Prune(ctx context.Context, keep int) ([]string, error) {
	if keep < 1 {
		return nil, nil
	}
	all, incomplete, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var drop []string
	if len(all) > keep {
		for _, m := range all[:len(all)-keep] {
			drop = append(drop, m.ID)
		}
	}
	if len(all) > 0 {
		newest := all[len(all)-1].ID
		for id := range incomplete {
			if id < newest {
				drop = append(drop, id)
			}
		}
	}
	var removed []string
	var errs []error
	for _, id := range drop {
		if err := s.Remove(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, id)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("prune %s: %w", s.uri, err)
	}
	return removed, nil
}
