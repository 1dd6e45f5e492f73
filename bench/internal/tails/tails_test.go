package tails

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/bench/internal/load"
)

// TestParseWrk reads wrk 4.1's --latency output; errors fail the window.
func TestParseWrk(t *testing.T) {
	out := `Running 3s test @ http://127.0.0.1:48545/
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   412.33us  301.20us   9.81ms   91.20%
    Req/Sec    40.12k     2.01k   44.10k    70.00%
  Latency Distribution
     50%  350.00us
     75%  480.00us
     90%  650.00us
     99%    1.37ms
  240000 requests in 3.00s, 40.00MB read
Requests/sec:  80000.50
Transfer/sec:     13.33MB
`
	s, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.RPS != 80000.5 || s.P50 != 350*time.Microsecond || s.P99 != 1370*time.Microsecond {
		t.Errorf("got %+v", s)
	}
	if _, err := parseWrk(out + "  Non-2xx or 3xx responses: 12\n"); err == nil {
		t.Error("non-2xx answers passed")
	}
	if _, err := parseWrk("Requests/sec: 1\n"); err == nil {
		t.Error("output without a distribution passed")
	}
}

// The fixed script pauses a constant of whole milliseconds; the exp one
// draws from an exponential of that mean, seeded per thread, cut at
// MaxThinks means; the closed loop's has no delay().
func TestLuaScript(t *testing.T) {
	for _, tc := range []struct {
		p    pacing
		want []string // nil when delay() must be absent
	}{
		{pacing{}, nil},
		{pacing{4 * time.Millisecond, load.PaceFixed}, []string{"function delay()\n  return 4\nend\n"}},
		{pacing{4 * time.Millisecond, load.PaceExp}, []string{"math.randomseed(seed)", "-math.log(1 - math.random()) * 4, 40)"}},
	} {
		path, err := luaScript(t.TempDir(), []byte(`{}`), tc.p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "delay"); got != (tc.want != nil) {
			t.Errorf("%v: script\n%s\nwant delay() %v", tc.p, b, tc.want != nil)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%v: script\n%s\nwant %q", tc.p, b, w)
			}
		}
	}
}

// -tails-pacing lists the paced windows after the back-to-back one.
func TestPacings(t *testing.T) {
	got, err := Options{Think: 5 * time.Millisecond, Pacings: "exp, fixed"}.pacings()
	want := []pacing{{}, {5 * time.Millisecond, load.PaceExp}, {5 * time.Millisecond, load.PaceFixed}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("pacings %v, %v; want %v", got, err, want)
	}
	if got, err := (Options{Pacings: "exp"}).pacings(); err != nil || len(got) != 1 {
		t.Errorf("no think: pacings %v, %v; want back to back only", got, err)
	}
	if _, err := (Options{Think: time.Millisecond, Pacings: "steady"}).pacings(); err == nil {
		t.Error("unknown pacing accepted")
	}
}

// Markdown has a table per pacing, each from its own samples.
func TestMarkdownPerPacing(t *testing.T) {
	r := &Report{Options: Options{Threads: 2, Think: 4 * time.Millisecond}}
	for _, th := range []time.Duration{0, 4 * time.Millisecond} {
		pace := load.PaceExp
		if th == 0 {
			pace = ""
		}
		for _, n := range []string{"preconf", "anvil"} {
			for _, h := range []string{"bench", "wrk"} {
				p99 := time.Millisecond // paced: preconf 1 ms, anvil 2 ms
				if n == "anvil" {
					p99 *= 2
				}
				if th == 0 && n == "preconf" { // back to back: preconf 6 ms
					p99 = 6 * time.Millisecond
				}
				r.Samples = append(r.Samples, Sample{Node: n, Workload: "w", Harness: h, Think: th, Pacing: pace, RPS: 1000, P99: p99, SockP99: p99})
			}
		}
	}
	md := r.Markdown()
	if !strings.Contains(md, "**Back to back**") || !strings.Contains(md, "**Paced, out of step**") {
		t.Fatalf("missing a table:\n%s", md)
	}
	back, paced, _ := strings.Cut(md, "**Paced")
	if !strings.Contains(back, "| 3.00× | 3.00× | 3.00× |") || !strings.Contains(paced, "| 0.50× | 0.50× | 0.50× |") {
		t.Fatalf("ratios mixed across pacings:\n%s", md)
	}
}
