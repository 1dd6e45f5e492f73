package reliability_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/internal/peers"
)

// promtool is Prometheus's checker (from Debian's prometheus package,
// installed alone by scripts/setup-prometheus). Missing, the test is
// skipped, except under CI=true, where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := peers.Program("promtool", "PRECONF_PROMTOOL")
	if err != nil {
		peers.Missing(t, err.Error()+": run scripts/setup-prometheus")
	}
	return path
}

// checkMetrics runs promtool check metrics on a node's /metrics and checks
// that the named series are there.
func checkMetrics(t *testing.T, tool string, p *proc, what string, want ...string) {
	t.Helper()
	code, body, err := get(p, "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("%s /metrics: %d %v", what, code, err)
	}
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics on the %s: %v\n%s", what, err, out.String())
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s /metrics lacks %q", what, w)
		}
	}
	t.Logf("FIGURE promtool check metrics: %s passes (%d lines)", what, strings.Count(body, "\n"))
}

// The dev node's and a follower's /metrics pass promtool, after some
// traffic so that every kind of series has values.
func TestMetricsPassPromtool(t *testing.T) {
	tool := promtool(t)
	dev := startProc(t, nil, "--datadir", t.TempDir(), "--log.level", "warn")
	for _, body := range []string{rpcBody("eth_blockNumber", "[]"), rpcBody("eth_nope", "[]"), rpcBody("eth_getBalance", `["0x1","pending"]`)} {
		post(dev, []byte(body))
	}
	time.Sleep(2500 * time.Millisecond) // a block sealed
	checkMetrics(t, tool, dev, "dev node",
		`preconf_rpc_requests_total{method="eth_blockNumber"} 1`, `preconf_rpc_errors_total{method="unknown"} 1`,
		"preconf_sequencer_seal_seconds_bucket", "preconf_sequencer_wal_fsync_seconds_bucket", "preconf_flashblock_transactions_bucket",
		"preconf_txpool_transactions", "preconf_pending_snapshot_age_seconds", "preconf_ws_subscriptions", "process_resident_memory_bytes")
	follower := startProc(t, nil, "follow", "--upstream", dev.url(), "--flashblocks", fmt.Sprintf("ws://%s/flashblocks", dev.addr),
		"--datadir", t.TempDir(), "--log.level", "warn")
	post(follower, []byte(rpcBody("eth_getBalance", `["0x0000000000000000000000000000000000000001","pending"]`)))
	time.Sleep(time.Second)
	checkMetrics(t, tool, follower, "follower",
		`preconf_follower_flashblocks_total{outcome="accepted"}`, "preconf_follower_visible_latency_seconds_bucket",
		"preconf_follower_upstream_round_trip_seconds_bucket", "preconf_follower_feed_connected 1",
		`preconf_rpc_requests_total{method="eth_getBalance"} 1`)
}
