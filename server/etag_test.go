package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// etag returns the ETag of an answer, checking that it is a strong tag.
func etag(t *testing.T, r *response) string {
	t.Helper()
	tag := r.header.Get("ETag")
	if len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		t.Fatalf("ETag %q: want a quoted strong tag; %s", tag, r)
	}
	return tag
}

// TestETags checks the entity tags of every kind of definition record:
// the read, the create and the update carry the record's tag; a read
// naming it in If-None-Match is a 304; a write whose If-Match names
// another is a 412 that changes nothing.
func TestETags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	kinds := []struct {
		name, path string
		update     map[string]any
		canDelete  bool
	}{
		{"domain", "/api/settings/domains/logic", map[string]any{"description": "Reasoning"}, true},
		{"level", "/api/settings/levels/math/1", map[string]any{"system_prompt": "Be brief."}, false},
		{"test", "/api/settings/tests/m2", map[string]any{"name": "Six"}, true},
		{"evaluator", "/api/settings/evaluators/spare", map[string]any{"name": "Spare one"}, true},
		{"tool", "/api/settings/tools/spare", map[string]any{"description": "Nothing"}, true},
	}
	must(t, e.post("/api/settings/evaluators", map[string]any{"id": "spare", "name": "Spare"}), http.StatusCreated)
	created := must(t, e.post("/api/settings/tools", map[string]any{"id": "spare",
		"function": map[string]any{"name": "spare"}}), http.StatusCreated)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			first := must(t, e.get(k.path), http.StatusOK)
			tag := etag(t, first)
			if again := etag(t, must(t, e.get(k.path), http.StatusOK)); again != tag {
				t.Fatalf("two reads of an unchanged record: %s then %s", tag, again)
			}

			// If-None-Match: 304 with the tag and no body; another tag reads.
			r := e.request(http.MethodGet, k.path, nil, "If-None-Match", tag)
			if r.status != http.StatusNotModified || len(r.body) != 0 || r.header.Get("ETag") != tag {
				t.Fatalf("If-None-Match current: %d %q ETag %q, want 304, no body, the tag", r.status, r.body, r.header.Get("ETag"))
			}
			must(t, e.request(http.MethodGet, k.path, nil, "If-None-Match", `"other"`), http.StatusOK)

			// A stale If-Match: 412, the current tag, nothing changed.
			before := e.state()
			r = e.request(http.MethodPut, k.path, k.update, "If-Match", `"stale"`)
			mustProblem(t, r, http.StatusPreconditionFailed, "header.If-Match")
			if r.header.Get("ETag") != tag {
				t.Errorf("412 ETag %q, want the current %q", r.header.Get("ETag"), tag)
			}
			e.assertUnchanged(t, before)

			// The current tag among others: the write is done, and its
			// answer carries the new tag, which the next read gives too.
			r = must(t, e.request(http.MethodPut, k.path, k.update, "If-Match", `"x", `+tag), http.StatusOK)
			next := etag(t, r)
			if next == tag {
				t.Fatalf("the tag did not change with the record: %s", tag)
			}
			if got := etag(t, must(t, e.get(k.path), http.StatusOK)); got != next {
				t.Fatalf("read after write: %s, the write answered %s", got, next)
			}
			// The old tag is stale now.
			mustProblem(t, e.request(http.MethodPut, k.path, k.update, "If-Match", tag), http.StatusPreconditionFailed)
			// * matches any existing record; no If-Match, no condition.
			must(t, e.request(http.MethodPut, k.path, k.update, "If-Match", "*"), http.StatusOK)
			must(t, e.put(k.path, k.update), http.StatusOK)
			// A tag a compressing proxy weakened still names the record.
			must(t, e.request(http.MethodPut, k.path, k.update, "If-Match", "W/"+next), http.StatusOK)

			if !k.canDelete {
				return
			}
			before = e.state()
			mustProblem(t, e.request(http.MethodDelete, k.path, nil, "If-Match", tag), http.StatusPreconditionFailed, "header.If-Match")
			e.assertUnchanged(t, before)
			must(t, e.request(http.MethodDelete, k.path, nil, "If-Match", next), http.StatusOK)
			mustProblem(t, e.request(http.MethodDelete, k.path, nil, "If-Match", "*"), http.StatusNotFound)
		})
	}

	t.Run("create answers the record's tag", func(t *testing.T) {
		// The tool created above: its creation's tag was its first read's,
		// before the updates.
		if etag(t, created) == "" {
			t.Fatal("no ETag")
		}
		r := must(t, e.post("/api/settings/domains", map[string]any{"id": "fresh", "name": "Fresh"}), http.StatusCreated)
		if got := etag(t, must(t, e.get("/api/settings/domains/fresh"), http.StatusOK)); got != etag(t, r) {
			t.Fatalf("read %s, create answered %s", got, etag(t, r))
		}
	})

	t.Run("move of a test with a stale tag", func(t *testing.T) {
		tag := etag(t, must(t, e.get("/api/settings/tests/m1"), http.StatusOK))
		move := map[string]any{"domain_id": "math", "level": 3}
		before := e.state()
		mustProblem(t, e.request(http.MethodPost, "/api/settings/tests/m1/move", move, "If-Match", `"stale"`), http.StatusPreconditionFailed)
		e.assertUnchanged(t, before)
		r := must(t, e.request(http.MethodPost, "/api/settings/tests/m1/move", move, "If-Match", tag), http.StatusOK)
		if got := r.object(t); got["domain_id"] != "math" || got["level"] != float64(3) {
			t.Fatalf("moved test: %v", got)
		}
	})
}

// TestLostUpdate is the case ETags exist for: two clients read the same
// record and both change it. Without If-Match the second write would
// silently undo the first; with it, the second gets a 412, reads again,
// and both changes are kept.
func TestLostUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	const path = "/api/settings/domains/math"
	read := must(t, e.get(path), http.StatusOK)
	tagA, tagB := etag(t, read), etag(t, read)

	// Each client sends the whole record it read, with its own change.
	recordA, recordB := read.object(t), read.object(t)
	recordA["name"] = "Mathematics"
	recordB["description"] = "Numbers and more"

	must(t, e.request(http.MethodPut, path, recordA, "If-Match", tagA), http.StatusOK)
	mustProblem(t, e.request(http.MethodPut, path, recordB, "If-Match", tagB), http.StatusPreconditionFailed)
	if got := must(t, e.get(path), http.StatusOK).object(t); got["name"] != "Mathematics" || got["description"] != "Arithmetic" {
		t.Fatalf("after the refused write: %v", got)
	}

	// Client B reads again, applies its change to the fresh record.
	fresh := must(t, e.get(path), http.StatusOK)
	recordB = fresh.object(t)
	recordB["description"] = "Numbers and more"
	must(t, e.request(http.MethodPut, path, recordB, "If-Match", etag(t, fresh)), http.StatusOK)
	if got := must(t, e.get(path), http.StatusOK).object(t); got["name"] != "Mathematics" || got["description"] != "Numbers and more" {
		t.Fatalf("both changes should be kept: %v", got)
	}
}

// TestIfMatchRace sends many writes with the same tag at once: the check
// and the write are one step, so exactly one succeeds.
func TestIfMatchRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	for _, path := range []string{"/api/settings/tests/m3", "/api/settings/domains/logic"} {
		tag := etag(t, must(t, e.get(path), http.StatusOK))
		const writers = 8
		statuses := make(chan int, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				r, err := e.try(http.MethodPut, path, map[string]any{"name": strings.Repeat("n", i+1)}, "If-Match", tag)
				if err != nil {
					t.Error(err)
					return
				}
				statuses <- r.status
			})
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[http.StatusOK] != 1 || count[http.StatusPreconditionFailed] != writers-1 {
			t.Errorf("%s: statuses %v, want one 200 and %d 412", path, count, writers-1)
		}
	}
}
