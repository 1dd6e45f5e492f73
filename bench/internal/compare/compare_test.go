package compare

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/workload"
)

func TestReportMarkdown(t *testing.T) {
	o := Options{Options: harness.Options{Duration: time.Second, Rounds: 2, Conns: 4, Nodes: []string{"preconf", "anvil", "geth"}}}
	r := newReport(o, []workload.Workload{{Name: "w"}})
	for round := 0; round < 2; round++ {
		r.add(round, "preconf", "w", load.Result{RPS: 200, P99: time.Millisecond, SockP99: 400 * time.Microsecond, ServerCPU: 12300 * time.Nanosecond, ClientCPU: 9100 * time.Nanosecond}, true)
		r.add(round, "anvil", "w", load.Result{RPS: 100, P99: 2 * time.Millisecond, SockP99: 1500 * time.Microsecond, ServerCPU: 24600 * time.Nanosecond, ClientCPU: 15200 * time.Nanosecond}, true)
	}
	r.missing("geth", os.ErrNotExist)
	r.summarise()
	if got := r.Summary[0].Ratio["anvil"]; got != 2 {
		t.Fatalf("ratio %v, want 2", got)
	}
	md := r.Markdown()
	// The CPU table: preconf, anvil, geth (none), anvil/preconf, geth/preconf
	// (none), then the generator's with each node. The p99 table: each
	// node's p99 and its part in the node.
	for _, want := range []string{"**2.00×**", "geth: **missing**", "| w |", "| w | 12.3 | 24.6 | – | 2.00× | – | 9.1 | 15.2 | – |",
		"| w | 1.00 | 0.40 | 2.00 | 1.50 | – | – |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if got, want := r.ReadmeRatios(), "| w | 2.00× | 0.50× | 0.27× | — | — | — |"; !strings.Contains(got, want) {
		t.Errorf("README ratios lack %q:\n%s", want, got)
	}
	dir := t.TempDir()
	if err := r.Write(dir, md); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "latest.json"))
	if err != nil || !json.Valid(raw) {
		t.Fatalf("latest.json: %v", err)
	}
}

// TestRatiosPairedByRound: the req/s and CPU ratios are the median of each
// round's ratio, not the ratio of the medians, and a round the peer failed
// pairs with nothing.
func TestRatiosPairedByRound(t *testing.T) {
	o := Options{Options: harness.Options{Duration: time.Second, Rounds: 4, Conns: 4, Nodes: []string{"preconf", "anvil"}}}
	r := newReport(o, []workload.Workload{{Name: "w"}})
	for round, rps := range [][2]float64{{100, 50}, {200, 150}, {120, 100}, {300, 10}} {
		cpu := func(rps float64) time.Duration { return time.Duration(1e9 / rps) }
		r.add(round, "preconf", "w", load.Result{RPS: rps[0], ServerCPU: cpu(rps[0])}, true)
		r.add(round, "anvil", "w", load.Result{RPS: rps[1], ServerCPU: cpu(rps[1])}, round < 3) // round 4: a failed probe
	}
	r.summarise()
	s := r.Summary[0]
	// Rounds 1-3: 2.0, 1.33, 1.2 (the medians' ratio would be 160/100).
	if got := s.Ratio["anvil"]; math.Abs(got-4.0/3) > 1e-9 {
		t.Errorf("req/s ratio %v, want 1.333", got)
	}
	if got := s.CPURatio["anvil"]; math.Abs(got-4.0/3) > 1e-3 {
		t.Errorf("CPU ratio %v, want 1.333", got)
	}
}

func TestWorkloadVerify(t *testing.T) {
	ws := map[string]workload.Workload{}
	for _, w := range workloads(false, nil) {
		ws[w.Name] = w
		if len(w.Bodies) == 0 || w.Calls == 0 {
			t.Fatalf("%s: no bodies", w.Name)
		}
		for _, b := range w.Bodies {
			if !json.Valid(b) {
				t.Fatalf("%s: invalid body %s", w.Name, b)
			}
		}
	}
	bal := ws["eth_getBalance/pending"]
	if err := bal.Verify([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x21e19e0c9bab2400000"}`)); err != nil {
		t.Errorf("10000 ETH rejected: %v", err)
	}
	if err := bal.Verify([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`)); err == nil {
		t.Error("wrong balance accepted")
	}
	if err := bal.Verify([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`)); err == nil {
		t.Error("error answer accepted")
	}
	blk := ws["eth_getBlockByNumber"]
	if err := blk.Verify([]byte(`{"id":1,"result":{"number":"0x0","hash":"0x` + strings.Repeat("ab", 32) + `"}}`)); err != nil {
		t.Errorf("block rejected: %v", err)
	}
	if err := blk.Verify([]byte(`{"id":1,"result":null}`)); err == nil {
		t.Error("null block accepted")
	}
	batch := ws["batch/10 mixed reads"]
	var answers []string
	for i := 0; i < 10; i++ {
		answers = append(answers, `{"id":1,"result":"0x1"}`)
	}
	if err := batch.Verify([]byte("[" + strings.Join(answers, ",") + "]")); err != nil {
		t.Errorf("batch rejected: %v", err)
	}
	if err := batch.Verify([]byte("[" + strings.Join(answers[:9], ",") + "]")); err == nil {
		t.Error("short batch accepted")
	}
	if err := load.CheckCalls(10)([]byte("[" + strings.Join(answers, ",") + "]")); err != nil {
		t.Errorf("checkCalls: %v", err)
	}
	if err := load.CheckCalls(10)([]byte("[" + strings.Join(answers[:9], ",") + "]")); err == nil {
		t.Error("checkCalls accepted a short batch")
	}
}
