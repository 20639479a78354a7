// Package pgtest runs a real PostgreSQL server for tests: Debian's
// postgresql package, initialised in a temporary directory (initdb) and
// started with pg_ctl, reachable only through a Unix socket in that
// directory, so that no port is taken and no two test processes collide.
//
// One server serves a whole test process: Shared starts it on first use
// and every test asks it for a fresh database of its own (NewDatabase).
// Such a database is a schema of its own in one shared database, named in
// the URL's search_path: as empty and as separate as a new database for
// everything Gauntlet does, and made in milliseconds where CREATE
// DATABASE takes half a second (it copies a template and checkpoints).
// A package whose tests use it stops it at the end from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// When the server's binaries are missing the tests that need it are
// skipped with the reason, unless the environment variable CI is set:
// there they fail, so that a CI machine without PostgreSQL cannot pass
// by skipping. When the tests run as root, the server runs as the
// unprivileged "postgres" user (PostgreSQL refuses to run as root),
// created when missing.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Superuser is the role initdb creates and every URL connects as.
const Superuser = "gauntlet"

// Server is a PostgreSQL server running in a temporary directory.
type Server struct {
	bin  string // directory of initdb, pg_ctl, postgres
	dir  string // the temporary directory: data/, the socket, the log
	runu string // the user the server runs as; "" for the current one

	mu      sync.Mutex
	running bool
	dbs     atomic.Int64

	adminOnce sync.Once
	admin     *sql.DB // to the shared database, for CreateSchema
}

// BinDir finds the directory of PostgreSQL's server binaries: PG_BINDIR
// when set, else pg_config --bindir, else the newest of Debian's
// /usr/lib/postgresql/<version>/bin. It returns an error naming what it
// looked for when there is none.
func BinDir() (string, error) {
	ok := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "initdb"))
		return err == nil
	}
	if d := os.Getenv("PG_BINDIR"); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("PG_BINDIR=%s has no initdb", d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); ok(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's server binaries (initdb, pg_ctl) are not installed: " +
		"apt-get install postgresql, or set PG_BINDIR to their directory")
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start initialises a server in a new temporary directory and starts it.
func Start() (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		if s.runu, err = serverUser(); err == nil {
			err = chown(dir, s.runu)
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.command("initdb", "-D", s.data(), "-A", "trust", "-U", Superuser,
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err == nil {
		_, err = db.Exec(`CREATE DATABASE "` + sharedDB + `"`)
		db.Close()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("create database %s: %w", sharedDB, err)
	}
	// The trigram extension that the runs' search indexes use, once in the
	// shared database: the tests' schemas, made at once by parallel tests,
	// then find it there rather than race to create it.
	if db, err = sql.Open("pgx", s.URL(sharedDB)); err == nil {
		_, err = db.Exec(`CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public`)
		db.Close()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("create extension pg_trgm: %w", err)
	}
	return s, nil
}

// serverUser returns the unprivileged user the server runs as when the
// tests run as root: "postgres", which Debian's package creates, created
// here when missing.
func serverUser() (string, error) {
	const name = "postgres"
	if _, err := user.Lookup(name); err == nil {
		return name, nil
	}
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("create the user %s to run PostgreSQL as: %w\n%s", name, err, out)
	}
	return name, nil
}

func chown(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// command runs one of the server's binaries as the server's user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.runu != "" {
		return exec.Command("runuser", append([]string{"-u", s.runu, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// Start starts the server after Stop (Start of the package starts it the
// first time): the same data directory, the same socket.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	// Only the Unix socket in the directory: no TCP port to collide on.
	// Durability is of no use to a test's throw-away databases.
	opts := "-k " + s.dir + " -p 5432 -c listen_addresses= -c max_connections=400 " +
		"-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB"
	cmd := s.command("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-o", opts, "-w", "-t", "60", "start")
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	s.running = true
	return nil
}

// Stop stops the server (fast shutdown: open connections are ended);
// Start starts it again with its databases.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	if out, err := s.command("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	s.running = false
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	if s.admin != nil {
		s.admin.Close()
	}
	err := s.Stop()
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// URL is the connection URL of a database of the server.
func (s *Server) URL(database string) string {
	return "postgres://" + Superuser + "@/" + database + "?host=" + s.dir + "&port=5432"
}

// sharedDB is the database that holds the tests' schemas.
const sharedDB = "gauntlet_tests"

// CreateSchema creates a schema of a new, unique name in the database the
// tests share and returns the URL of a database whose search_path puts
// it first (then public, where extensions are created).
func (s *Server) CreateSchema(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), s.dbs.Add(1))
	s.adminOnce.Do(func() { s.admin, _ = sql.Open("pgx", s.URL(sharedDB)) })
	if _, err := s.admin.ExecContext(ctx, `CREATE SCHEMA "`+name+`"`); err != nil {
		return "", fmt.Errorf("create schema %s: %w", name, err)
	}
	return s.URL(sharedDB) + "&search_path=" + name + ",public", nil
}

// CreateDatabase creates a database of a new, unique name and returns its
// URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), s.dbs.Add(1))
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

var (
	shared    *Server
	sharedErr error
	sharedMu  sync.Mutex
	started   bool
)

// Shared returns the test process's server, starting it on first use. A
// test that cannot have one is skipped with the reason (failed when the
// environment variable CI is set).
func Shared(t testing.TB) *Server {
	t.Helper()
	sharedMu.Lock()
	if !started {
		started = true
		shared, sharedErr = Start()
	}
	s, err := shared, sharedErr
	sharedMu.Unlock()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL for tests: %v", err)
		}
		t.Skipf("PostgreSQL for tests: %v", err)
	}
	return s
}

// NewDatabase creates a fresh database (a schema of its own, see
// CreateSchema) on the shared server and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := s.CreateSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Main runs a package's tests and then stops the shared server when one
// was started, returning the exit code for os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		shared = nil
	}
	return code
}

// Log returns the server's log so far, for a failing test to print.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return string(bytes.TrimSpace(b))
}
