package runs

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

func createRunning(t *testing.T, s *Store, id string) {
	t.Helper()
	in := Info{RunID: id, StartedAt: Now(), ModelName: "m", Model: "m", Status: StatusRunning, TotalTests: 2, Domains: []string{"d"}}
	if err := s.CreateRun(context.Background(), in, []CellKey{{Domain: "d", Level: 1, Tests: 2}}); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseKeepsLiveRuns: a serve-like process owns a running run; a
// second process opening the same store does not mark it interrupted
// while the owner's heartbeat is fresh. A run whose owner stopped beating
// (killed) is marked once its heartbeat is older than the lease's
// timeout; a run with no owner (made before leases) at once.
func TestLeaseKeepsLiveRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	server, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := server.Lease(ctx, LeaseOptions{Kind: KindServe, Command: "gauntlet serve", Definitions: "/defs/b",
		Heartbeat: 20 * time.Millisecond, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	createRunning(t, server, "live")

	// A process that died without a lease left this one.
	orphanStore, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	createRunning(t, orphanStore, "ownerless")

	// A process killed mid-run: its lease stops beating, its row stays.
	killedStore, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	killed, err := killedStore.Lease(ctx, LeaseOptions{Kind: KindRun, Command: "gauntlet run",
		Heartbeat: 20 * time.Millisecond, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	createRunning(t, killedStore, "killed")
	killed.abandon()

	// The second process.
	cli, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cliLease, err := cli.Lease(ctx, LeaseOptions{Kind: KindRun, Command: "gauntlet run", Definitions: "/defs/a"})
	if err != nil {
		t.Fatal(err)
	}
	defer cliLease.Close()
	ids, err := cli.MarkInterruptedRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids, "live") || !slices.Contains(ids, "ownerless") {
		t.Fatalf("marked %v; want ownerless and never live", ids)
	}
	if got, _ := cli.Run(ctx, "live"); got.Status != StatusRunning {
		t.Fatalf("live run = %s; want running", got.Status)
	}
	procs, err := cli.Processes(ctx)
	if err != nil || len(procs) < 2 {
		t.Fatalf("processes = %+v, %v", procs, err)
	}
	if p, alive, ok, err := cli.RunOwner(ctx, "live"); err != nil || !ok || !alive || p.Kind != KindServe ||
		p.PID != os.Getpid() || p.Definitions != "/defs/b" || p.Host == "" {
		t.Errorf("owner of live = %+v alive %v ok %v, %v", p, alive, ok, err)
	}

	// The killed process's run is marked once its heartbeat is stale.
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(ids, "killed") {
		if time.Now().After(deadline) {
			t.Fatal("the run of a lease that stopped beating was never marked interrupted")
		}
		time.Sleep(50 * time.Millisecond)
		more, err := cli.MarkInterruptedRuns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, more...)
	}
	if slices.Contains(ids, "live") {
		t.Fatalf("marked %v: the live run too", ids)
	}
	if got, _ := cli.Run(ctx, "killed"); got.Status != StatusInterrupted || got.CompletedAt == nil {
		t.Errorf("killed run = %+v", got)
	}
	// The dead lease's row is gone once its runs are closed.
	var n int
	if err := sqldb.Bun(db).NewSelect().Table("processes").ColumnExpr("COUNT(*)").Where("id = ?", killed.ID()).Scan(ctx, &n); err != nil || n != 0 {
		t.Errorf("dead lease rows = %d, %v", n, err)
	}

	// The server's lease ends (the process exits): its run left running is
	// then closed by the next process.
	if err := lease.Close(); err != nil {
		t.Fatal(err)
	}
	if ids, err := cli.MarkInterruptedRuns(ctx); err != nil || !slices.Equal(ids, []string{"live"}) {
		t.Errorf("after the server's lease ended: marked %v, %v; want [live]", ids, err)
	}
}

// TestLeaseOfDeadPID: on the same host, a lease whose process no longer
// runs is dead at once, whatever its heartbeat says.
func TestLeaseOfDeadPID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Lease(ctx, LeaseOptions{Kind: KindServe, Command: "gauntlet serve", Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	createRunning(t, s, "r")
	l.abandon()
	// A pid that no longer runs: that of a child that has exited.
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skip("no /bin/true to find a dead pid")
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.Bun(db).NewUpdate().Table("processes").Set("pid = ?", p.Pid).Where("id = ?", l.ID()).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := other.MarkInterruptedRuns(ctx); err != nil || !slices.Equal(ids, []string{"r"}) {
		t.Errorf("marked %v, %v; want [r]", ids, err)
	}
}

// TestResumedRecorded: each resume of a run is recorded in its info.
func TestResumedRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, dbtest.Open(t))
	if err != nil {
		t.Fatal(err)
	}
	createRunning(t, s, "r")
	if got, _ := s.Run(ctx, "r"); got.Resumed.Count != 0 || len(got.Resumed.At) != 0 {
		t.Fatalf("resumed of a new run = %+v", got.Resumed)
	}
	for i := 1; i <= 2; i++ {
		if _, err := s.MarkInterruptedRuns(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReopenRun(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if got.Resumed.Count != i || len(got.Resumed.At) != i || got.Status != StatusRunning {
			t.Fatalf("after resume %d: %+v", i, got)
		}
	}
}
