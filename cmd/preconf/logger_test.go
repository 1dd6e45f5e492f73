package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestLogFormats(t *testing.T) {
	var buf bytes.Buffer
	l, err := makeLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("serving JSON-RPC", "url", "http://127.0.0.1:8545")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "serving JSON-RPC" || rec["url"] != "http://127.0.0.1:8545" || rec["level"] != "INFO" {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	buf.Reset()
	l, _ = makeLogger(&buf, "warn", "text")
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=shown k=1") {
		t.Fatalf("text log: %q", out)
	}
	if _, err := makeLogger(&buf, "info", "xml"); err == nil {
		t.Fatal("--log.format xml accepted")
	}
}
