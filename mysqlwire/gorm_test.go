package mysqlwire_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// gormItem matches the table gorm_items that the test creates in DuckDB's
// own SQL: AutoMigrate must find nothing to change.
type gormItem struct {
	ID      int64  `gorm:"primaryKey;autoIncrement:false"`
	Name    string `gorm:"not null"`
	Qty     int32
	Price   float64
	Active  bool
	Created time.Time `gorm:"precision:6"`
	Note    *string
}

func (gormItem) TableName() string { return "gorm_items" }

// gormItemRated is gormItem with one more column, indexed.
type gormItemRated struct {
	gormItem
	Rating float64 `gorm:"index"`
}

func (gormItemRated) TableName() string { return "gorm_items" }

// gormFresh is a model whose table GORM creates itself, in types DuckDB
// reads as they are.
type gormFresh struct {
	ID      int64 `gorm:"primaryKey;autoIncrement:false"`
	Qty     int32 `gorm:"not null"`
	Price   float64
	Active  bool
	Created time.Time `gorm:"precision:6"`
}

func (gormFresh) TableName() string { return "gorm_fresh" }

// openGorm opens GORM on the server with gorm.io/driver/mysql and records
// the DDL statements it runs.
func openGorm(t *testing.T, addr string) (*gorm.DB, func() []string) {
	t.Helper()
	db, err := gorm.Open(gormmysql.Open("u:@tcp("+addr+")/main?parseTime=true&timeout=5s"),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("gorm open: %v", err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	var mu sync.Mutex
	var ddl []string
	record := func(tx *gorm.DB) {
		sql := strings.TrimSpace(tx.Statement.SQL.String())
		word := strings.ToUpper(strings.Fields(sql + " x")[0])
		if word == "CREATE" || word == "ALTER" || word == "DROP" {
			mu.Lock()
			ddl = append(ddl, sql)
			mu.Unlock()
		}
	}
	if err := db.Callback().Raw().After("gorm:raw").Register("test:ddl", record); err != nil {
		t.Fatalf("register callback: %v", err)
	}
	return db, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := ddl
		ddl = nil
		return out
	}
}

func TestGORM_Migrator(t *testing.T) {
	addr := startDemo(t)
	db, takeDDL := openGorm(t, addr)
	m := db.Migrator()

	t.Run("HasTable", func(t *testing.T) {
		for table, want := range map[string]bool{"orders": true, "products": true, "no_such_table": false} {
			if got := m.HasTable(table); got != want {
				t.Errorf("HasTable(%s) = %v, want %v", table, got, want)
			}
		}
	})

	t.Run("ColumnTypes", func(t *testing.T) {
		cols, err := m.ColumnTypes("orders")
		if err != nil {
			t.Fatalf("ColumnTypes: %v", err)
		}
		var got []string
		for _, c := range cols {
			full, _ := c.ColumnType()
			nullable, _ := c.Nullable()
			pk, _ := c.PrimaryKey()
			got = append(got, fmt.Sprintf("%s %s %s null=%v pk=%v", c.Name(), c.DatabaseTypeName(), full, nullable, pk))
		}
		want := []string{
			"order_id bigint bigint null=false pk=true",
			"customer_id int int null=false pk=false",
			"product_id int int null=false pk=false",
			"quantity smallint smallint null=false pk=false",
			"status longtext longtext null=false pk=false",
			"ordered_at timestamp timestamp(6) null=false pk=false",
			"tags json json null=true pk=false",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if p, s, ok := cols[0].DecimalSize(); !ok || p != 19 || s != 0 {
			t.Errorf("order_id DecimalSize = %d, %d, %v, want 19, 0, true", p, s, ok)
		}
	})

	t.Run("ColumnTypes of every type", func(t *testing.T) {
		if err := db.Exec(`CREATE TABLE gorm_every (c_bool BOOLEAN, c_tinyint TINYINT, c_smallint SMALLINT, c_int INTEGER,
			c_bigint BIGINT, c_utinyint UTINYINT, c_usmallint USMALLINT, c_uint UINTEGER, c_ubigint UBIGINT,
			c_decimal DECIMAL(10,3), c_double DOUBLE, c_real REAL, c_varchar VARCHAR, c_blob BLOB, c_date DATE,
			c_time TIME, c_ts TIMESTAMP, c_tstz TIMESTAMPTZ, c_uuid UUID, c_list INTEGER[],
			c_struct STRUCT(a INTEGER), c_map MAP(VARCHAR, INTEGER), c_json JSON)`).Error; err != nil {
			t.Fatalf("create: %v", err)
		}
		cols, err := m.ColumnTypes("gorm_every")
		if err != nil {
			t.Fatalf("ColumnTypes: %v", err)
		}
		var got []string
		for _, c := range cols {
			full, _ := c.ColumnType()
			got = append(got, c.Name()+" "+full)
		}
		want := []string{
			"c_bool tinyint(1)", "c_tinyint tinyint", "c_smallint smallint", "c_int int", "c_bigint bigint",
			"c_utinyint tinyint unsigned", "c_usmallint smallint unsigned", "c_uint int unsigned", "c_ubigint bigint unsigned",
			"c_decimal decimal(10,3)", "c_double double", "c_real float", "c_varchar longtext", "c_blob longblob",
			"c_date date", "c_time time(6)", "c_ts datetime(6)", "c_tstz timestamp(6)", "c_uuid char(36)",
			"c_list json", "c_struct json", "c_map json", "c_json json",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !m.HasTable("gorm_every") {
			t.Error("HasTable(gorm_every) = false")
		}
	})

	t.Run("AutoMigrate of a table that matches", func(t *testing.T) {
		if err := db.Exec("CREATE TABLE gorm_items (id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, qty INTEGER, " +
			"price DOUBLE, active BOOLEAN, created TIMESTAMP, note VARCHAR)").Error; err != nil {
			t.Fatalf("create: %v", err)
		}
		takeDDL()
		if err := db.AutoMigrate(&gormItem{}); err != nil {
			t.Fatalf("AutoMigrate: %v", err)
		}
		if ddl := takeDDL(); len(ddl) != 0 {
			t.Errorf("AutoMigrate of a matching table ran %q, want nothing", ddl)
		}
	})

	t.Run("AutoMigrate adds a column and its index", func(t *testing.T) {
		if err := db.AutoMigrate(&gormItemRated{}); err != nil {
			t.Fatalf("AutoMigrate: %v", err)
		}
		if ddl := takeDDL(); len(ddl) != 2 {
			t.Errorf("AutoMigrate ran %q, want an ALTER TABLE and a CREATE INDEX", ddl)
		}
		if !m.HasColumn(&gormItemRated{}, "Rating") || !m.HasIndex(&gormItemRated{}, "idx_gorm_items_rating") {
			t.Errorf("rating or its index is missing")
		}
		if err := db.AutoMigrate(&gormItemRated{}); err != nil {
			t.Fatalf("AutoMigrate again: %v", err)
		}
		if ddl := takeDDL(); len(ddl) != 0 {
			t.Errorf("AutoMigrate again ran %q, want nothing", ddl)
		}
	})

	t.Run("AutoMigrate creates a table, then leaves it", func(t *testing.T) {
		if err := db.AutoMigrate(&gormFresh{}); err != nil {
			t.Fatalf("AutoMigrate: %v", err)
		}
		if ddl := takeDDL(); len(ddl) != 1 || !strings.HasPrefix(ddl[0], "CREATE TABLE") {
			t.Errorf("AutoMigrate ran %q, want one CREATE TABLE", ddl)
		}
		if err := db.AutoMigrate(&gormFresh{}); err != nil {
			t.Fatalf("AutoMigrate again: %v", err)
		}
		if ddl := takeDDL(); len(ddl) != 0 {
			t.Errorf("AutoMigrate again ran %q, want nothing", ddl)
		}
		if err := db.Create(&gormFresh{ID: 1, Qty: 2, Price: 1.5, Active: true, Created: time.Date(2024, 2, 29, 1, 2, 3, 0, time.UTC)}).Error; err != nil {
			t.Fatalf("insert: %v", err)
		}
		var got gormFresh
		if err := db.First(&got, 1).Error; err != nil {
			t.Fatalf("read back: %v", err)
		}
		if got.Qty != 2 || !got.Active || got.Price != 1.5 {
			t.Errorf("read back %+v", got)
		}
	})
}
