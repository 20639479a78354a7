package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL's text cannot hold every string: a NUL character or bytes
// that are not UTF-8 are refused. Model output is any bytes, and SQLite
// keeps it as it is, so on PostgreSQL a string parameter that text cannot
// hold is stored escaped, and read back unescaped, by the connection
// (textConn): the store packages see the same bytes on both databases.
// This covers values bound as parameters, as Insert binds every row that
// holds model output; a value bun writes into the SQL text as a literal
// is not escaped, so such values must be text PostgreSQL holds.
//
// The escaped form starts with textMarker (U+FDD0, a Unicode
// noncharacter, which text does not carry), then the string with "\"
// written "\\", NUL "\0" and each byte that is not UTF-8 "\xHH": the valid
// text in it stays readable and searchable. A string that itself starts
// with the marker is escaped too, so that reading is never ambiguous.
const textMarker = "\uFDD0"

// needsEscape reports whether text cannot hold s as it is.
func needsEscape(s string) bool {
	return strings.HasPrefix(s, textMarker) || strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// escapeText returns the form of s that text holds.
func escapeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(textMarker) + 8)
	b.WriteString(textMarker)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			if s[i] < 0x10 {
				b.WriteByte('0')
			}
			b.WriteString(strconv.FormatUint(uint64(s[i]), 16))
		case r == 0:
			b.WriteString(`\0`)
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unescapeText reverses escapeText; a string not in the escaped form is
// returned as it is.
func unescapeText(s string) string {
	if !strings.HasPrefix(s, textMarker) {
		return s
	}
	s = s[len(textMarker):]
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '0':
			b.WriteByte(0)
			i++
		case '\\':
			b.WriteByte('\\')
			i++
		case 'x':
			if i+4 <= len(s) {
				if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
					b.WriteByte(byte(n))
					i += 3
					continue
				}
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// textConnector opens connections whose string parameters are escaped
// and whose string results are unescaped.
type textConnector struct{ driver.Connector }

func (c textConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pc, ok := conn.(pgConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("the PostgreSQL driver's connection (%T) lacks a method Gauntlet needs", conn)
	}
	return textConn{pc}, nil
}

// pgConn is what pgx's database/sql connection implements.
type pgConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.NamedValueChecker
}

// textConn is a connection that escapes its string parameters and
// unescapes its string results.
type textConn struct{ pgConn }

func (c textConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.pgConn.ExecContext(ctx, query, escapeArgs(args))
	if err != nil {
		return nil, badConn(err)
	}
	return res, nil
}

func (c textConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.pgConn.QueryContext(ctx, query, escapeArgs(args))
	if err != nil {
		return nil, badConn(err)
	}
	return textRows{rows}, nil
}

// BeginTx is the driver's, except that a connection PostgreSQL ended
// while it sat in the pool (a restart, pg_terminate_backend) is
// driver.ErrBadConn, so database/sql retries on another connection; see
// badConn.
func (c textConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.pgConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, badConn(err)
	}
	return tx, nil
}

func (c textConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.pgConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, badConn(err)
	}
	ps, ok := st.(pgStmt)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("the PostgreSQL driver's statement (%T) lacks a method Gauntlet needs", st)
	}
	return textStmt{ps}, nil
}

// badConn is driver.ErrBadConn for a failure that says the connection
// was dead before the statement could do anything, else err:
//
//   - a failure pgx says is safe to retry (nothing reached the server),
//     which pgx itself marks only where it surfaces from the send, not
//     with a query's first row nor at BEGIN or PREPARE;
//   - PostgreSQL's FATAL "terminating connection" for a shutdown, a
//     crash or an idle session (57P01, 57P02, 57P05), waiting on the
//     socket of a pooled connection (pgx reads it while it writes). On a
//     statement in flight it means PostgreSQL aborted the statement's
//     transaction: running it again on a new connection does it once.
//     (The exception, a backend ended after its commit and before its
//     ReadyForQuery, is a window of microseconds during a shutdown.)
//
// database/sql retries a statement outside a transaction on ErrBadConn,
// and hands it back as an error inside one.
func badConn(err error) error {
	if pgconn.SafeToRetry(err) {
		return driver.ErrBadConn
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Severity == "FATAL" {
		switch pe.Code {
		case "57P01", "57P02", "57P05":
			return driver.ErrBadConn
		}
	}
	return err
}

// pgStmt is what pgx's database/sql statement implements.
type pgStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type textStmt struct{ pgStmt }

func (s textStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.pgStmt.ExecContext(ctx, escapeArgs(args))
}

func (s textStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.pgStmt.QueryContext(ctx, escapeArgs(args))
	if err != nil {
		return nil, err
	}
	return textRows{rows}, nil
}

// escapeArgs returns args with every string in the form text holds.
func escapeArgs(args []driver.NamedValue) []driver.NamedValue {
	var out []driver.NamedValue
	for i, a := range args {
		s, ok := a.Value.(string)
		if !ok || !needsEscape(s) {
			continue
		}
		if out == nil {
			out = slices.Clone(args)
		}
		out[i].Value = escapeText(s)
	}
	if out == nil {
		return args
	}
	return out
}

// textRows unescapes the strings of each row.
type textRows struct{ driver.Rows }

func (r textRows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return err
	}
	for i, v := range dest {
		if s, ok := v.(string); ok && strings.HasPrefix(s, textMarker) {
			dest[i] = unescapeText(s)
		}
	}
	return nil
}
