package lake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Transform is how a partition value is derived from its source column.
type Transform string

const (
	// Identity partitions by the column's value.
	Identity Transform = "identity"
	// Day partitions a timestamp or date column by UTC day.
	Day Transform = "day"
	// Hour partitions a timestamp column by UTC hour.
	Hour Transform = "hour"
)

// PartitionField is one field of a table's partition spec.
type PartitionField struct {
	// Column is the source column, a top-level field of the schema.
	Column string
	// Transform derives the partition value; empty means Identity.
	Transform Transform
	// Name is the partition field's name; empty means Column for
	// Identity and Column_day or Column_hour otherwise.
	Name string
}

// ParsePartitionSpec parses a comma-separated spec such as
// "day(ts), region" or "hour(_timestamp)". "none" or an empty string is an
// unpartitioned table.
func ParsePartitionSpec(s string) ([]PartitionField, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return nil, nil
	}
	var out []PartitionField
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("iceberg: partition spec %q has an empty item", s)
		}
		f := PartitionField{Column: item, Transform: Identity}
		if open := strings.IndexByte(item, '('); open >= 0 {
			if !strings.HasSuffix(item, ")") {
				return nil, fmt.Errorf("iceberg: partition item %q: missing closing parenthesis", item)
			}
			f.Transform = Transform(strings.ToLower(strings.TrimSpace(item[:open])))
			f.Column = strings.TrimSpace(item[open+1 : len(item)-1])
		}
		switch f.Transform {
		case Identity, Day, Hour:
		default:
			return nil, fmt.Errorf("iceberg: partition item %q: unknown transform %q (use identity, day or hour)", item, f.Transform)
		}
		if f.Column == "" {
			return nil, fmt.Errorf("iceberg: partition item %q names no column", item)
		}
		out = append(out, f)
	}
	return out, nil
}

func (f PartitionField) transform() (iceberg.Transform, string, error) {
	switch f.Transform {
	case "", Identity:
		return iceberg.IdentityTransform{}, f.Column, nil
	case Day:
		return iceberg.DayTransform{}, f.Column + "_day", nil
	case Hour:
		return iceberg.HourTransform{}, f.Column + "_hour", nil
	default:
		return nil, "", fmt.Errorf("iceberg: partition on %q: unknown transform %q (use identity, day or hour)", f.Column, f.Transform)
	}
}

// buildSpec turns fields into an iceberg-go partition spec over sch.
func buildSpec(fields []PartitionField, sch *iceberg.Schema) (iceberg.PartitionSpec, error) {
	if len(fields) == 0 {
		return *iceberg.UnpartitionedSpec, nil
	}
	opts := make([]iceberg.PartitionOption, 0, len(fields))
	for _, f := range fields {
		tr, name, err := f.transform()
		if err != nil {
			return iceberg.PartitionSpec{}, err
		}
		if f.Name != "" {
			name = f.Name
		}
		src, ok := sch.FindFieldByName(f.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("iceberg: partition column %q is not in the schema", f.Column)
		}
		if f.Transform == Day || f.Transform == Hour {
			switch src.Type.(type) {
			case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			case iceberg.DateType:
				if f.Transform == Hour {
					return iceberg.PartitionSpec{}, fmt.Errorf("iceberg: partition hour(%s): column %q is a date; hour needs a timestamp", f.Column, f.Column)
				}
			default:
				return iceberg.PartitionSpec{}, fmt.Errorf("iceberg: partition %s(%s): column %q is %s; it needs a timestamp", f.Transform, f.Column, f.Column, src.Type)
			}
		}
		opts = append(opts, iceberg.AddPartitionFieldByName(f.Column, name, tr, sch, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("iceberg: partition spec: %w", err)
	}
	return spec, nil
}

// specMatches reports whether the table's current spec partitions by the
// same columns and transforms as want, in the same order.
func specMatches(tbl *table.Table, want []PartitionField) error {
	spec := tbl.Spec()
	sch := tbl.Schema()
	describe := func() string {
		var parts []string
		for _, f := range spec.Fields() {
			col, _ := sch.FindColumnName(f.SourceID())
			parts = append(parts, fmt.Sprintf("%s(%s)", f.Transform, col))
		}
		if len(parts) == 0 {
			return "unpartitioned"
		}
		return strings.Join(parts, ", ")
	}
	if spec.NumFields() != len(want) {
		return fmt.Errorf("iceberg: table %s is partitioned as %s, not as asked; changing a table's partitioning is not supported", strings.Join(tbl.Identifier(), "."), describe())
	}
	i := 0
	for _, f := range spec.Fields() {
		tr, _, err := want[i].transform()
		if err != nil {
			return err
		}
		col, _ := sch.FindColumnName(f.SourceID())
		if col != want[i].Column || f.Transform.String() != tr.String() {
			return fmt.Errorf("iceberg: table %s is partitioned as %s, not as asked; changing a table's partitioning is not supported", strings.Join(tbl.Identifier(), "."), describe())
		}
		i++
	}
	return nil
}

// Table is one Iceberg table of a [Lake]. It is safe for concurrent use;
// every commit works on freshly loaded metadata.
type Table struct {
	lake  *Lake
	ident table.Identifier

	mu  sync.Mutex
	tbl *table.Table // the most recently loaded or committed state
}

// Table returns the table namespace.name, creating the namespace and the
// table on first use. A namespace may have several levels separated by
// dots ("sales.eu").
//
// On creation the table gets schema (Arrow non-nullable fields become
// required columns, nanosecond timestamps are stored as microseconds) and
// the partitioning of spec. When the table exists:
//
//   - fields of schema that the table lacks are added as optional columns;
//   - a field whose type widens the column by a legal Iceberg promotion
//     (int to long, float to double, decimal precision) widens it;
//   - a field narrower than its column (int data for a long column) is
//     accepted as it is;
//   - any other type change, nullable data for a required column, or a
//     required column missing from schema is refused with an error naming
//     the field, and nothing is committed;
//   - a non-empty spec must match the table's partitioning; an empty spec
//     accepts whatever the table has.
//
// schema may be nil to load an existing table as it is.
func (l *Lake) Table(ctx context.Context, namespace, name string, schema *arrow.Schema, spec []PartitionField) (*Table, error) {
	if namespace == "" || name == "" {
		return nil, errors.New("iceberg: a table needs a namespace and a name")
	}
	ns := catalog.ToIdentifier(strings.Split(namespace, ".")...)
	ident := append(ns[:len(ns):len(ns)], name)

	tbl, err := l.cat.LoadTable(ctx, ident)
	switch {
	case err == nil:
	case errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace):
		if schema == nil {
			return nil, fmt.Errorf("iceberg: table %s does not exist and no schema was given to create it: %w", strings.Join(ident, "."), err)
		}
		tbl, err = l.create(ctx, ns, ident, schema, spec)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("iceberg: load table %s: %w", strings.Join(ident, "."), err)
	}

	if len(spec) > 0 {
		if err := specMatches(tbl, spec); err != nil {
			return nil, err
		}
	}
	t := &Table{lake: l, ident: ident, tbl: tbl}
	if schema != nil {
		if err := t.evolve(ctx, schema); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (l *Lake) create(ctx context.Context, ns, ident table.Identifier, schema *arrow.Schema, spec []PartitionField) (*table.Table, error) {
	if err := l.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("iceberg: create namespace %s: %w", strings.Join(ns, "."), err)
	}
	sch, err := table.ArrowSchemaToIcebergWithFreshIDs(schema, true)
	if err != nil {
		return nil, fmt.Errorf("iceberg: table %s: convert the Arrow schema: %w", strings.Join(ident, "."), err)
	}
	ps, err := buildSpec(spec, sch)
	if err != nil {
		return nil, err
	}
	var tbl *table.Table
	for attempt := 0; ; attempt++ {
		tbl, err = l.cat.CreateTable(ctx, ident, sch,
			catalog.WithPartitionSpec(&ps),
			catalog.WithProperties(iceberg.Properties{
				table.PropertyFormatVersion: "2",
				table.ParquetCompressionKey: "zstd",
			}))
		// PostgreSQL's serializable transaction, in which iceberg-go
		// creates a table, fails when other tables are created at the same
		// moment; iceberg-go retries only drivers whose errors expose a
		// SQLState method, which bun's pgdriver's do not.
		if err == nil || attempt == 9 || !isSQLState(err, "40001") {
			break
		}
		select {
		case <-time.After(time.Duration(20*(attempt+1)) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		// Another writer created it first; use theirs.
		tbl, err = l.cat.LoadTable(ctx, ident)
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg: create table %s: %w", strings.Join(ident, "."), err)
	}
	return tbl, nil
}

// Identifier returns the table's namespace levels followed by its name.
func (t *Table) Identifier() []string { return append([]string(nil), t.ident...) }

// Iceberg returns the underlying iceberg-go table, freshly loaded from the
// catalog, for reading (Scan) and for operations this package does not
// wrap.
func (t *Table) Iceberg(ctx context.Context) (*table.Table, error) {
	return t.refresh(ctx)
}

func (t *Table) refresh(ctx context.Context) (*table.Table, error) {
	tbl, err := t.lake.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return nil, fmt.Errorf("iceberg: load table %s: %w", strings.Join(t.ident, "."), err)
	}
	t.mu.Lock()
	t.tbl = tbl
	t.mu.Unlock()
	return tbl, nil
}

func (t *Table) current() *table.Table {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tbl
}

func (t *Table) setCurrent(tbl *table.Table) {
	t.mu.Lock()
	t.tbl = tbl
	t.mu.Unlock()
}

// ErrIncompatibleSchema is wrapped by the errors that refuse a schema
// change; the message names the field.
var ErrIncompatibleSchema = errors.New("incompatible schema change")

// evolve brings the table's schema up to schema, committing through
// iceberg-go's schema update, or refuses with ErrIncompatibleSchema.
func (t *Table) evolve(ctx context.Context, schema *arrow.Schema) error {
	incoming, err := table.ArrowSchemaToIcebergWithFreshIDs(schema, true)
	if err != nil {
		return fmt.Errorf("iceberg: table %s: convert the Arrow schema: %w", strings.Join(t.ident, "."), err)
	}
	const attempts = 8
	tbl := t.current()
	for attempt := 0; ; attempt++ {
		change, err := compareSchemas(tbl.Schema(), incoming)
		if err != nil {
			return fmt.Errorf("iceberg: table %s: %w", strings.Join(t.ident, "."), err)
		}
		if !change {
			t.setCurrent(tbl)
			return nil
		}
		txn := tbl.NewTransaction()
		upd := txn.UpdateSchema(true, false).UnionByNameWith(incoming)
		if err := upd.Commit(); err != nil {
			return fmt.Errorf("iceberg: table %s: %w: %v", strings.Join(t.ident, "."), ErrIncompatibleSchema, err)
		}
		next, err := txn.Commit(ctx)
		if err == nil {
			t.setCurrent(next)
			return nil
		}
		if !isConflict(err) || attempt+1 >= attempts {
			return fmt.Errorf("iceberg: table %s: update the schema: %w", strings.Join(t.ident, "."), err)
		}
		if err := sleepBackoff(ctx, attempt); err != nil {
			return err
		}
		if tbl, err = t.refresh(ctx); err != nil {
			return err
		}
	}
}

// compareSchemas checks that data of schema incoming can go into a table of
// schema existing, and reports whether the table needs new or widened
// columns for it.
func compareSchemas(existing, incoming *iceberg.Schema) (bool, error) {
	return compareStruct("", existing.AsStruct().FieldList, incoming.AsStruct().FieldList)
}

func compareStruct(prefix string, existing, incoming []iceberg.NestedField) (bool, error) {
	change := false
	have := make(map[string]iceberg.NestedField, len(existing))
	for _, f := range existing {
		have[f.Name] = f
	}
	seen := make(map[string]bool, len(incoming))
	for _, in := range incoming {
		seen[in.Name] = true
		ex, ok := have[in.Name]
		if !ok {
			change = true
			continue
		}
		c, err := compareField(prefix+in.Name, ex, in)
		if err != nil {
			return false, err
		}
		change = change || c
	}
	for _, ex := range existing {
		if ex.Required && !seen[ex.Name] {
			return false, fmt.Errorf("%w: field %q is required by the table but missing from the data", ErrIncompatibleSchema, prefix+ex.Name)
		}
	}
	return change, nil
}

func compareField(path string, ex, in iceberg.NestedField) (bool, error) {
	if ex.Required && !in.Required {
		return false, fmt.Errorf("%w: field %q is required by the table but nullable in the data", ErrIncompatibleSchema, path)
	}
	return compareType(path, ex.Type, in.Type)
}

func compareType(path string, ex, in iceberg.Type) (bool, error) {
	if ex.Equals(in) {
		return false, nil
	}
	switch et := ex.(type) {
	case *iceberg.StructType:
		it, ok := in.(*iceberg.StructType)
		if !ok {
			break
		}
		return compareStruct(path+".", et.FieldList, it.FieldList)
	case *iceberg.ListType:
		it, ok := in.(*iceberg.ListType)
		if !ok {
			break
		}
		return compareField(path+".element", et.ElementField(), it.ElementField())
	case *iceberg.MapType:
		it, ok := in.(*iceberg.MapType)
		if !ok {
			break
		}
		if !et.KeyType.Equals(it.KeyType) {
			return false, fmt.Errorf("%w: field %q: map key type %s cannot change to %s", ErrIncompatibleSchema, path, et.KeyType, it.KeyType)
		}
		return compareField(path+".value", et.ValueField(), it.ValueField())
	default:
		ep, ok1 := ex.(iceberg.PrimitiveType)
		ip, ok2 := in.(iceberg.PrimitiveType)
		if ok1 && ok2 {
			if promotes(ip, ep) {
				return false, nil // narrower data fits the column
			}
			if promotes(ep, ip) {
				return true, nil // the column widens
			}
		}
	}
	return false, fmt.Errorf("%w: field %q: type %s cannot change to %s (only int to long, float to double and wider decimal precision are allowed)", ErrIncompatibleSchema, path, ex, in)
}

// promotes reports whether Iceberg's schema evolution may change a column
// of type from to type to.
func promotes(from, to iceberg.PrimitiveType) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && f.Scale() == t.Scale() && f.Precision() <= t.Precision()
	}
	return false
}

// isConflict reports whether a commit error means another writer changed
// the table first and nothing of this commit was applied, so the commit
// may be rebuilt on fresh metadata and tried again.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	// The SQL catalog reports a failed requirement (the branch or schema
	// moved since the transaction read it) as a plain error, and SQLite
	// reports lock contention that outlasted the busy timeout; in both the
	// catalog row was not updated.
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "requirement failed") ||
		strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "database table is locked") ||
		strings.Contains(msg, "sqlite_busy")
}

// sleepBackoff waits before retry attempt+1: 20 ms doubling up to 1 s, with
// jitter so competing writers spread out.
func sleepBackoff(ctx context.Context, attempt int) error {
	d := 20 * time.Millisecond << min(attempt, 6)
	if d > time.Second {
		d = time.Second
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return nil
	}
}
