package suite

import (
	"strings"
	"testing"
)

// TestCheck: a node whose end state differs fails the run; the ratio is
// the median of each round's loop time over anvil's, the client floor the
// median of each round's client main-thread CPU over anvil's loop time.
func TestCheck(t *testing.T) {
	end := End{Number: "200", Nonce: 201, Block: "201", Contract: "0xc"}
	r := &Report{Nodes: []string{"preconf", "anvil"}, Runs: map[string][]Loop{
		"preconf": {{TotalMs: 100, End: end}, {TotalMs: 300, End: end}, {TotalMs: 90, End: end}},
		"anvil":   {{TotalMs: 200, End: end, ClientThreadCPUMs: 160}, {TotalMs: 300, End: end, ClientThreadCPUMs: 270}, {TotalMs: 100, End: end, ClientThreadCPUMs: 70}},
	}}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	if got := r.Ratio["preconf"]; got != 0.9 {
		t.Errorf("ratio %v, want 0.9 (rounds 0.5, 1, 0.9)", got)
	}
	if got := r.Floor["anvil"]; got != 0.8 {
		t.Errorf("client floor %v, want 0.8 (rounds 0.8, 0.9, 0.7)", got)
	}
	if md := r.Markdown(); !strings.Contains(md, "preconf **0.90×**") {
		t.Errorf("markdown lacks the ratio:\n%s", md)
	}
	r.Runs["preconf"][0].WritesMs = []float64{10, 20}
	r.Runs["preconf"][0].Requests = map[string]map[string]int{"writes": {"eth_getTransactionReceipt": 3}}
	if got := r.Runs["preconf"][0].checksPerWrite(); got != 1.5 {
		t.Errorf("receipt checks per write %v, want 1.5 (3 checks, 2 writes)", got)
	}
	r.Runs["anvil"][1].End.Number = "201"
	if err := r.check(); err == nil {
		t.Error("a different end state passed")
	}
}
