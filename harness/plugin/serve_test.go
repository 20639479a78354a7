package plugin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// The plugin's log lines are in the JSON form go-plugin's host side
// parses (hclog's keys and timestamp layout).
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newLogHandler(&buf))
	log.Warn("judge slow", "ms", 1200, slog.Group("g", "k", "v"))
	log.Log(t.Context(), slog.LevelDebug-4, "very fine")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), buf.Bytes())
	}
	var rec map[string]any
	if err := json.Unmarshal(lines[0], &rec); err != nil {
		t.Fatal(err)
	}
	if rec["@level"] != "warn" || rec["@message"] != "judge slow" || rec["ms"] != 1200.0 {
		t.Errorf("record %v", rec)
	}
	if g, _ := rec["g"].(map[string]any); g["k"] != "v" {
		t.Errorf("group %v", rec["g"])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", rec["@timestamp"].(string)); err != nil {
		t.Errorf("timestamp: %v", err)
	}
	if err := json.Unmarshal(lines[1], &rec); err != nil || rec["@level"] != "trace" {
		t.Errorf("trace record %v (%v)", rec, err)
	}
}

func TestBuildVersion(t *testing.T) {
	if v := buildVersion(); v == "" {
		t.Error("empty version")
	}
}

func TestVersionedPlugins(t *testing.T) {
	sets := VersionedPlugins()
	if len(sets) != 1 || len(sets[ProtocolVersion]) != 3 {
		t.Fatalf("%v", sets)
	}
	for _, k := range []Kind{KindEvaluator, KindChannel, KindTool} {
		if sets[ProtocolVersion][string(k)] == nil {
			t.Errorf("no %s plugin", k)
		}
	}
}
