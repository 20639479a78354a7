package server

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestTranscriptContentBase64: a transcript message whose bytes are not
// UTF-8 (a registered tool's output, a model brought by an embedder)
// carries them exactly in content_base64, as a response does.
func TestTranscriptContentBase64(t *testing.T) {
	t.Parallel()
	odd := "out \xff\xfe\x00"
	got := toAPITranscript([]runs.Message{
		{Message: harness.Message{Role: harness.RoleTool, Content: odd, ToolCallID: "c1"}},
		{Message: harness.Message{Role: harness.RoleAssistant, Content: "fine"}, Pass2: true},
	})
	raw, err := base64.StdEncoding.DecodeString(got[0].ContentBase64)
	if err != nil || string(raw) != odd || got[1].ContentBase64 != "" || !got[1].Pass2 {
		t.Fatalf("messages %+v", got)
	}
	b, _ := json.Marshal(got[1])
	if string(b) != `{"role":"assistant","content":"fine","pass2":true,"truncated":false}` {
		t.Errorf("JSON %s", b)
	}
}
