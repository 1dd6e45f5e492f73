package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
)

const metricsBefore = `# HELP x_seconds x
# TYPE x_seconds histogram
x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.01"} 20
x_seconds_bucket{le="+Inf"} 20
x_seconds_sum 0.05
x_seconds_count 20
x_other 3
`

const metricsAfter = `x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.01"} 119
x_seconds_bucket{le="+Inf"} 120
x_seconds_sum 0.55
x_seconds_count 120
`

func TestHistogramSince(t *testing.T) {
	before, err := parseHistogram(strings.NewReader(metricsBefore), "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseHistogram(strings.NewReader(metricsAfter), "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	// 100 new observations: 99 at ≤ 10 ms, one above; the mean is 5 ms.
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 10 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {0.999, time.Duration(1<<63 - 1)}} {
		n, mean, got := after.since(before, tc.q)
		if n != 100 || mean != 5*time.Millisecond || got != tc.want {
			t.Errorf("q %v: n %d mean %v bound %v, want 100 5ms %v", tc.q, n, mean, got, tc.want)
		}
	}
	if _, err := parseHistogram(strings.NewReader(metricsAfter), "y_seconds"); err == nil {
		t.Error("a missing histogram parsed")
	}
}

// The senders' transactions are signed in k order, sender k%K, nonces
// consecutive per sender across calls.
func TestWriteSendersSign(t *testing.T) {
	s := newWriteSenders(4)
	reqs, err := s.sign("127.0.0.1:1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 10 || s.nonces[0] != 3 || s.nonces[1] != 3 || s.nonces[2] != 2 || s.nonces[3] != 2 {
		t.Fatalf("%d requests, nonces %v; want 10, [3 3 2 2]", len(reqs), s.nonces)
	}
	for i, r := range reqs {
		if !strings.Contains(string(r), `"eth_sendRawTransaction"`) {
			t.Fatalf("request %d: %.100s", i, r)
		}
	}
}

// TestWriteSendersGenesis: -writeload-chain picks the genesis; both fund
// every sender and raise the gas limit.
func TestWriteSendersGenesis(t *testing.T) {
	s := newWriteSenders(3)
	for _, tt := range []struct {
		chain string
		op    bool
	}{{"l1", false}, {"op", true}} {
		t.Run(tt.chain, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "genesis.json")
			if err := s.genesis(tt.chain)(path); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var g core.Genesis
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			if op := g.Config.Optimism != nil; op != tt.op {
				t.Fatalf("OP-stack config %v, want %v", op, tt.op)
			}
			if g.GasLimit != writeloadGasLimit {
				t.Fatalf("gas limit %d, want %d", g.GasLimit, writeloadGasLimit)
			}
			for _, a := range s.addrs {
				if acct, ok := g.Alloc[a]; !ok || acct.Balance.Sign() <= 0 {
					t.Fatalf("sender %s not funded", a)
				}
			}
		})
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "a\n<!-- bench:x begin -->\nold\n<!-- bench:x end -->\nb\n<!-- bench:y begin -->\n<!-- bench:y end -->\n"
	got, err := replaceSection(doc, "x", "new table\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n<!-- bench:x begin -->\nnew table\n<!-- bench:x end -->\nb\n<!-- bench:y begin -->\n<!-- bench:y end -->\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := replaceSection(doc, "z", "t"); err == nil {
		t.Error("a missing section was replaced")
	}
	// The real files carry every section -write-docs writes.
	for file, names := range map[string][]string{"../docs/bench.md": {"main", "writeload", "follow", "bigstate"}, "../README.md": {"readme"}} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if _, err := replaceSection(string(raw), n, "t"); err != nil {
				t.Errorf("%s: %v", file, err)
			}
		}
	}
}

// TestSentTxs: OP-stack deposits are the node's own, not the generator's.
func TestSentTxs(t *testing.T) {
	tests := []struct {
		name string
		txs  []hexutil.Bytes
		want int
	}{
		{"none", nil, 0},
		{"deposit alone", []hexutil.Bytes{{0x7e, 0xf8}}, 0},
		{"deposit and sent", []hexutil.Bytes{{0x7e, 0xf8}, {0x02, 0xf8}, {0xf8, 0x6b}}, 2},
		{"sent only", []hexutil.Bytes{{0x02, 0xf8}, {0x01, 0xf8}}, 2},
	}
	for _, tt := range tests {
		if got := sentTxs(tt.txs); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
