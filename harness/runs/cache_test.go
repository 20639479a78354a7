package runs_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestResponseCache stores answers and reads them back exactly: any
// bytes of content, tool calls, usage; a key stored twice keeps its first
// answer; an unknown key is a miss, not an error.
func TestResponseCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	odd := harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: "ok\x00\xff\xfe end"},
		Usage: harness.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, Model: "m-1", FinishReason: "stop"}
	calls := harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant,
		ToolCalls: []harness.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, FinishReason: "tool_calls"}
	if err := s.SaveCachedResponses(ctx, []runs.CacheEntry{{Key: "a", Response: odd}, {Key: "b", Response: calls}, {Key: "a", Response: calls}}); err != nil {
		t.Fatal(err)
	}
	// A later batch with a stored key keeps the first answer and stores the rest.
	if err := s.SaveCachedResponses(ctx, []runs.CacheEntry{{Key: "a", Response: calls}, {Key: "c", Response: odd}}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]harness.ChatResponse{"a": odd, "b": calls, "c": odd} {
		got, ok, err := s.CachedResponse(ctx, key)
		if err != nil || !ok || !reflect.DeepEqual(*got, want) {
			t.Errorf("%s = %+v, %v, %v; want %+v", key, got, ok, err, want)
		}
	}
	if got, ok, err := s.CachedResponse(ctx, "missing"); got != nil || ok || err != nil {
		t.Errorf("missing = %+v, %v, %v", got, ok, err)
	}
	if n, err := s.CacheSize(ctx); n != 3 || err != nil {
		t.Errorf("size = %d, %v", n, err)
	}
}
