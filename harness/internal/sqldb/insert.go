package sqldb

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// maxParams bounds the bind parameters of one statement, well under
// SQLite's limit (32,766) and PostgreSQL's (65,535).
const maxParams = 30000

// Insert inserts bun model rows (a slice of struct pointers or of structs)
// with bind parameters: every value travels to the database as it is, byte
// for byte. bun's own INSERT writes values into the SQL text as literals,
// where a NUL character ends the statement and invalid UTF-8 is replaced;
// model output is any bytes, so the rows that hold it go through Insert.
//
// On PostgreSQL, whose text holds neither NUL nor bytes that are not
// UTF-8, a string that has them is stored escaped and read back as it was
// (see textConn).
//
// Columns whose Go type is a map, a slice (other than []byte) or a struct
// are stored as JSON text, as bun does; nil pointers, maps and slices are
// NULL. Auto-increment keys are left to the database.
func Insert(ctx context.Context, tx bun.Tx, rows any) error {
	v := reflect.Indirect(reflect.ValueOf(rows))
	if v.Kind() != reflect.Slice {
		return fmt.Errorf("sqldb.Insert: want a slice of rows, got %T", rows)
	}
	if v.Len() == 0 {
		return nil
	}
	elem := v.Type().Elem()
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	table := tx.Dialect().Tables().Get(elem)
	var fields []string
	var cols []int
	for i, f := range table.Fields {
		if f.AutoIncrement {
			continue
		}
		fields = append(fields, string(f.SQLName))
		cols = append(cols, i)
	}
	perStmt := max(1, maxParams/len(cols))
	pg := tx.Dialect().Name() == dialect.PG
	for start := 0; start < v.Len(); start += perStmt {
		end := min(start+perStmt, v.Len())
		var b strings.Builder
		b.WriteString("INSERT INTO ")
		b.WriteString(string(table.SQLName))
		b.WriteString(" (")
		b.WriteString(strings.Join(fields, ", "))
		b.WriteString(") VALUES ")
		args := make([]any, 0, (end-start)*len(cols))
		for i := start; i < end; i++ {
			row := reflect.Indirect(v.Index(i))
			if i > start {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for j, c := range cols {
				if j > 0 {
					b.WriteString(", ")
				}
				arg, err := bindValue(table.Fields[c].Value(row))
				if err != nil {
					return fmt.Errorf("insert into %s: column %s: %w", table.Name, table.Fields[c].Name, err)
				}
				args = append(args, arg)
				if pg {
					b.WriteString("$" + strconv.Itoa(len(args)))
				} else {
					b.WriteByte('?')
				}
			}
			b.WriteByte(')')
		}
		// The raw *sql.Tx: bun's own ExecContext would format the arguments
		// into the SQL text again.
		if _, err := tx.Tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("insert into %s: %w", table.Name, err)
		}
	}
	return nil
}

// bindValue turns a field's value into a driver argument.
func bindValue(v reflect.Value) (any, error) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	if v.CanInterface() {
		if dv, ok := v.Interface().(driver.Valuer); ok {
			return dv.Value()
		}
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return v.Float(), nil
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Bytes(), nil
		}
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
	case reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// InsertAll inserts rows as Insert does, in a transaction of its own.
func InsertAll(ctx context.Context, db *bun.DB, rows any) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return Insert(ctx, tx, rows)
	})
}
