package tails

import (
	"testing"
	"time"
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
