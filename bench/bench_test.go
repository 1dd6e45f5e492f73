package main

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preconf/preconf/chain"
)

// echoServer answers every POST with a fixed body; mode selects how the
// body is framed (Content-Length, chunked, or closing the connection).
func echoServer(t *testing.T, mode string, answer string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch mode {
		case "chunked":
			w.Write([]byte(answer[:len(answer)/2]))
			w.(http.Flusher).Flush()
			w.Write([]byte(answer[len(answer)/2:]))
		case "close":
			w.Header().Set("Connection", "close")
			w.Write([]byte(answer))
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("boom"))
		default:
			w.Write([]byte(answer))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRunLoad(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":1,"result":"0x1"}`
	for _, tc := range []struct {
		mode       string
		answer     string
		wantErrors bool
	}{
		{"length", ok, false},
		{"chunked", ok, false},
		{"close", ok, false},
		{"length", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`, true},
		{"500", ok, true},
	} {
		t.Run(tc.mode+"/"+tc.answer[len(tc.answer)-12:], func(t *testing.T) {
			srv, served := echoServer(t, tc.mode, tc.answer)
			addr := strings.TrimPrefix(srv.URL, "http://")
			res, err := runLoad(loadConfig{Addr: addr, Conns: 4, Duration: 10 * time.Second, MaxRequests: 200,
				Bodies: [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"method":"x"}`)}, Check: checkCalls(1)})
			if err != nil {
				t.Fatal(err)
			}
			total := res.Requests + res.Errors
			if total != 200 {
				t.Fatalf("requests %d + errors %d = %d, want the budget of 200", res.Requests, res.Errors, total)
			}
			if got := served.Load(); got != 200 {
				t.Fatalf("server saw %d requests, want 200", got)
			}
			if tc.wantErrors {
				if res.Errors != 200 || res.FirstError == "" {
					t.Fatalf("errors %d (%q), want 200 with a message", res.Errors, res.FirstError)
				}
				return
			}
			if res.Errors != 0 {
				t.Fatalf("errors %d: %s", res.Errors, res.FirstError)
			}
			if res.RPS <= 0 || res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
				t.Fatalf("inconsistent stats: %+v", res)
			}
			if res.ClientCPU <= 0 { // 200 requests' syscalls and parsing
				t.Fatalf("generator CPU per request %v, want > 0", res.ClientCPU)
			}
		})
	}
}

func TestRunLoadStopsAtDuration(t *testing.T) {
	srv, _ := echoServer(t, "length", `{"result":1}`)
	res, err := runLoad(loadConfig{Addr: strings.TrimPrefix(srv.URL, "http://"), Conns: 2, Duration: 200 * time.Millisecond,
		Bodies: [][]byte{[]byte(`{}`)}, Check: checkCalls(1)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for q, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 1: 100, 0: 1} {
		if got := percentile(d, q); got != want {
			t.Errorf("percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing should be 0")
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
}

func TestRotate(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	for round, want := range []string{"a b c", "b c a", "c a b", "a b c"} {
		if got := strings.Join(rotate(nodes, round), " "); got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
}

func TestWorkloadVerify(t *testing.T) {
	ws := map[string]workload{}
	for _, w := range workloads() {
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
	if err := bal.verify([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x21e19e0c9bab2400000"}`)); err != nil {
		t.Errorf("10000 ETH rejected: %v", err)
	}
	if err := bal.verify([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`)); err == nil {
		t.Error("wrong balance accepted")
	}
	if err := bal.verify([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`)); err == nil {
		t.Error("error answer accepted")
	}
	blk := ws["eth_getBlockByNumber"]
	if err := blk.verify([]byte(`{"id":1,"result":{"number":"0x0","hash":"0x` + strings.Repeat("ab", 32) + `"}}`)); err != nil {
		t.Errorf("block rejected: %v", err)
	}
	if err := blk.verify([]byte(`{"id":1,"result":null}`)); err == nil {
		t.Error("null block accepted")
	}
	batch := ws["batch/10 mixed reads"]
	var answers []string
	for i := 0; i < 10; i++ {
		answers = append(answers, `{"id":1,"result":"0x1"}`)
	}
	if err := batch.verify([]byte("[" + strings.Join(answers, ",") + "]")); err != nil {
		t.Errorf("batch rejected: %v", err)
	}
	if err := batch.verify([]byte("[" + strings.Join(answers[:9], ",") + "]")); err == nil {
		t.Error("short batch accepted")
	}
	if err := checkCalls(10)([]byte("[" + strings.Join(answers, ",") + "]")); err != nil {
		t.Errorf("checkCalls: %v", err)
	}
	if err := checkCalls(10)([]byte("[" + strings.Join(answers[:9], ",") + "]")); err == nil {
		t.Error("checkCalls accepted a short batch")
	}
}

// The shared genesis must load in preconf exactly as written, with the
// contract and its storage.
func TestGenesisLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "genesis.json")
	if err := writeGenesis(path); err != nil {
		t.Fatal(err)
	}
	g, err := chain.LoadGenesis(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Config.ChainID.Uint64() != chain.DevChainID {
		t.Fatalf("chain id %v", g.Config.ChainID)
	}
	acct, ok := g.Alloc[contractAddr]
	if !ok || len(acct.Code) == 0 || len(acct.Storage) != storageSlots {
		t.Fatalf("contract missing or incomplete: %+v", acct)
	}
	for _, a := range chain.DevAccounts() {
		if g.Alloc[a].Balance.Cmp(devBalance()) != 0 {
			t.Fatalf("account %s balance %v", a, g.Alloc[a].Balance)
		}
	}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StateReader(c.Head().Root)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < storageSlots; i++ {
		v, err := r.Storage(contractAddr, slotKey(i))
		if err != nil || v != slotValue(i) {
			t.Fatalf("slot %d = %x (%v), want %x", i, v, err, slotValue(i))
		}
	}
}

func TestReportMarkdown(t *testing.T) {
	o := options{Duration: time.Second, Warmup: 0, Rounds: 2, Conns: 4, Nodes: []string{"preconf", "anvil", "geth"}}
	r := newReport(o, []workload{{Name: "w"}})
	for round := 0; round < 2; round++ {
		r.add(round, "preconf", "w", loadResult{RPS: 200, P99: time.Millisecond, SockP99: 400 * time.Microsecond, ServerCPU: 12300 * time.Nanosecond, ClientCPU: 9100 * time.Nanosecond}, true)
		r.add(round, "anvil", "w", loadResult{RPS: 100, P99: 2 * time.Millisecond, SockP99: 1500 * time.Microsecond, ServerCPU: 24600 * time.Nanosecond, ClientCPU: 15200 * time.Nanosecond}, true)
	}
	r.missing("geth", os.ErrNotExist)
	r.summarise()
	if got := r.Summary[0].Ratio["anvil"]; got != 2 {
		t.Fatalf("ratio %v, want 2", got)
	}
	md := r.markdown()
	// The CPU table: preconf, anvil, geth (none), anvil/preconf, geth/preconf
	// (none), then the generator's with each node. The p99 table: each
	// node's p99 and its part in the node.
	for _, want := range []string{"**2.00×**", "geth: **missing**", "| w |", "| w | 12.3 | 24.6 | – | 2.00× | – | 9.1 | 15.2 | – |",
		"| w | 1.00 | 0.40 | 2.00 | 1.50 | – | – |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if got, want := r.readmeRatios(), "| w | 2.00× | 0.50× | 0.27× | — | — | — |"; !strings.Contains(got, want) {
		t.Errorf("README ratios lack %q:\n%s", want, got)
	}
	dir := t.TempDir()
	if err := r.write(dir, md); err != nil {
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
	o := options{Duration: time.Second, Rounds: 4, Conns: 4, Nodes: []string{"preconf", "anvil"}}
	r := newReport(o, []workload{{Name: "w"}})
	for round, rps := range [][2]float64{{100, 50}, {200, 150}, {120, 100}, {300, 10}} {
		cpu := func(rps float64) time.Duration { return time.Duration(1e9 / rps) }
		r.add(round, "preconf", "w", loadResult{RPS: rps[0], ServerCPU: cpu(rps[0])}, true)
		r.add(round, "anvil", "w", loadResult{RPS: rps[1], ServerCPU: cpu(rps[1])}, round < 3) // round 4: a failed probe
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

// TestPreconfBaseFlag: -preconf-base DIR adds node preconf-base right after
// preconf (so the ratios include preconf/preconf-base); naming that node
// without the flag is an error.
func TestPreconfBaseFlag(t *testing.T) {
	o, err := parseFlags([]string{"-nodes", "preconf,anvil", "-preconf-base", "/tmp/main"}, io.Discard)
	if err != nil || strings.Join(o.Nodes, ",") != "preconf,preconf-base,anvil" || o.BaseRepo != "/tmp/main" {
		t.Fatalf("nodes %v base %q: %v", o.Nodes, o.BaseRepo, err)
	}
	if _, err := parseFlags([]string{"-nodes", "preconf,preconf-base"}, io.Discard); err == nil {
		t.Fatal("preconf-base without -preconf-base accepted")
	}
}
