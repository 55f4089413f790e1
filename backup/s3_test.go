package backup_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// TestStore_S3 takes, lists, verifies and restores backups on SeaweedFS,
// one of them left without its manifest as an interrupted upload leaves
// it.
func TestStore_S3(t *testing.T) {
	testsvc.ClearAWSEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"quiver-backups"}})
	s3 := lake.S3Config{Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}
	ctx := context.Background()
	st, err := backup.Open(ctx, "s3://quiver-backups/prod/", s3)
	if err != nil {
		t.Fatal(err)
	}
	db, b := served(t)
	exec(t, db, "CREATE TABLE t AS SELECT range AS id, 'row ' || range AS s FROM range(200000)")
	first, err := b.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, db, "INSERT INTO t SELECT range + 200000, 'more' FROM range(10)")
	second, err := b.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("list", func(t *testing.T) {
		list, incomplete, err := st.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != first.ID || list[1].ID != second.ID || len(incomplete) != 0 {
			t.Errorf("got %d backups and %v incomplete, want %s and %s", len(list), incomplete, first.ID, second.ID)
		}
	})
	t.Run("verify", func(t *testing.T) {
		if _, err := backup.Verify(ctx, st, second, t.TempDir()); err != nil {
			t.Error(err)
		}
	})
	t.Run("restore", func(t *testing.T) {
		got := restore(t, st, second)
		if n := queryInt(t, got, "SELECT count(*) FROM t"); n != 200010 {
			t.Errorf("got %d rows, want 200010", n)
		}
	})
	t.Run("without its manifest", func(t *testing.T) {
		other, err := backup.Open(ctx, "s3://quiver-backups/prod", s3)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Remove(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		// What an interrupted backup leaves: its database, no manifest.
		objs, err := lake.OpenObjects(ctx, "s3://quiver-backups/prod", s3)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := objs.Put(ctx, "20200101T000000.000Z/"+backup.DatabaseFile, strings.NewReader("partial")); err != nil {
			t.Fatal(err)
		}
		list, incomplete, err := other.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != second.ID {
			t.Errorf("got %d complete backups, want only %s", len(list), second.ID)
		}
		if _, ok := incomplete["20200101T000000.000Z"]; !ok {
			t.Errorf("got incomplete %v, want 20200101T000000.000Z", incomplete)
		}
		if _, err := other.Manifest(ctx, "20200101T000000.000Z"); !errors.Is(err, backup.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
}
