package bigstate

import (
	"strings"
	"testing"
	"time"
)

func TestReadyNote(t *testing.T) {
	tests := []struct {
		startup, ready time.Duration
		want           string
	}{
		{45 * time.Millisecond, 45 * time.Millisecond, ""},
		{45 * time.Millisecond, 150 * time.Millisecond, ""},
		{45 * time.Millisecond, 31200 * time.Millisecond, " (ready 31.20s)"},
	}
	for _, tt := range tests {
		if got := readyNote(tt.startup, tt.ready); got != tt.want {
			t.Errorf("readyNote(%s, %s) = %q, want %q", tt.startup, tt.ready, got, tt.want)
		}
	}
}

// TestBigstateMarkdownGenerateOnly: a report without nodes (the
// -bigstate-generate-only run) renders its header, no workload table.
func TestBigstateMarkdownGenerateOnly(t *testing.T) {
	r := &Report{Meta: bigstateMeta{Accounts: 10, Slots: 20}, Nodes: map[string]*bigstateNode{}}
	md := r.Markdown()
	if !strings.Contains(md, "10 accounts, 20 storage slots") || strings.Contains(md, "eth_getBalance") {
		t.Errorf("markdown:\n%s", md)
	}
}
