package sqldb_test

import (
	"context"
	"os"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMain stops the PostgreSQL server the tests may have started.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

type textRow struct {
	bun.BaseModel `bun:"table:texts"`
	ID            int64          `bun:"id,pk,autoincrement"`
	Body          string         `bun:"body,notnull"`
	Note          *string        `bun:"note"`
	Meta          map[string]any `bun:"meta,type:text"`
	Blob          []byte         `bun:"blob"`
}

// TestInsertKeepsEveryByte: model output is any bytes; what goes in comes
// back out unchanged, whatever bun would have done with it as a literal.
func TestInsertKeepsEveryByte(t *testing.T) {
	ctx := context.Background()
	b := sqldb.Bun(dbtest.Open(t))
	if _, err := b.NewCreateTable().Model((*textRow)(nil)).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		"nul \x00 inside",
		"\x00",
		"invalid \xff\xfe utf-8",
		"lone surrogate \xed\xa0\x80",
		"emoji 🦀🎉 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
		`quote ' double " backslash \ \\ ?`,
		"'); DROP TABLE texts; --",
		"",
	}
	note := "n\x00te"
	rows := make([]*textRow, len(bodies))
	for i, b := range bodies {
		rows[i] = &textRow{Body: b, Meta: map[string]any{"k": b}, Blob: []byte(b)}
	}
	rows[0].Note = &note
	if err := sqldb.InsertAll(ctx, b, rows); err != nil {
		t.Fatal(err)
	}
	var got []textRow
	if err := b.NewSelect().Model(&got).Order("id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(bodies) {
		t.Fatalf("rows = %d, want %d", len(got), len(bodies))
	}
	for i, b := range bodies {
		if got[i].Body != b {
			t.Errorf("body %d = %q, want %q", i, got[i].Body, b)
		}
		if string(got[i].Blob) != b {
			t.Errorf("blob %d = %q, want %q", i, got[i].Blob, b)
		}
		if got[i].ID == 0 {
			t.Errorf("row %d has no id", i)
		}
	}
	if got[0].Note == nil || *got[0].Note != note || got[1].Note != nil {
		t.Errorf("notes = %v, %v", got[0].Note, got[1].Note)
	}
	if got[0].Meta["k"] != bodies[0] {
		t.Errorf("meta = %q", got[0].Meta["k"])
	}

	// Many rows: more than one statement's worth of parameters.
	many := make([]textRow, 12000)
	for i := range many {
		many[i].Body = "x\x00y"
	}
	if err := sqldb.InsertAll(ctx, b, many); err != nil {
		t.Fatal(err)
	}
	var stored []string
	if err := b.NewSelect().Model((*textRow)(nil)).Column("body").Where("id > ?", got[len(got)-1].ID).Scan(ctx, &stored); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range stored {
		if s == "x\x00y" {
			n++
		}
	}
	if n != len(many) {
		t.Errorf("rows of the large insert = %d of %d, want %d", n, len(stored), len(many))
	}
}
