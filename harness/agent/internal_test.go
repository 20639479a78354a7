package agent

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestKeyedMutex(t *testing.T) {
	t.Parallel()
	var k keyedMutex
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	for i := range 200 {
		wg.Go(func() {
			key := fmt.Sprint(i % 7)
			unlock := k.lock(key)
			mu.Lock()
			inside[key]++
			if inside[key] > 1 {
				t.Errorf("two holders of %s", key)
			}
			mu.Unlock()
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if n := k.size(); n != 0 {
		t.Errorf("%d keys left after every unlock", n)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	secrets := secretValues(map[string]any{"bot_token": "12:ab/c d", "name": "visible", "n": map[string]any{"password": "pw"}}, secretRule{})
	got := redact("GET /bot12:ab/c d/x?t=12%3Aab%2Fc+d and 12:ab%2Fc%20d, pw, visible", secrets)
	if strings.Contains(got, "12:ab") || strings.Contains(got, "pw") || !strings.Contains(got, "visible") {
		t.Errorf("redact = %q", got)
	}
}

// TestURLSecretValues: the credentials of a config's URLs are among the
// secret values kept out of last_error and the logs.
func TestURLSecretValues(t *testing.T) {
	t.Parallel()
	stored := map[string]any{
		"callback_url": "https://u:secret@host/x",
		"nested":       map[string]any{"api_url": "https://tok@host/y"},
		"list":         []any{"https://a:b@h/1", "plain"},
	}
	got := secretValues(stored, secretRule{})
	for _, want := range []string{"secret", "tok", "b"} {
		if !slices.Contains(got, want) {
			t.Errorf("secretValues %q lacks %q", got, want)
		}
	}
}
