package main

import (
	"strings"
	"testing"
)

// A bad value of an option that a package's Config.Validate refuses exits
// 2 naming the flag, for each package whose options the command line sets:
// simulate (through api), api and follower.
func TestPackageFlagErrors(t *testing.T) {
	follow := []string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1"}
	for _, tc := range []struct {
		pkg  string
		args []string
		want string
	}{
		{"node", []string{"--rpc.timeout", "-1s"}, "--rpc.timeout must not be negative"},
		{"node", []string{"--rpc.max-connections", "-1"}, "--rpc.max-connections must not be negative"},
		{"node, following", append(follow, "--ws.max-subscriptions", "-1"), "--ws.max-subscriptions must not be negative"},
		{"simulate", []string{"--rpc.evmtimeout", "-2s"}, "--rpc.evmtimeout must not be negative"},
		{"api", []string{"--rpc.getlogs-max-results", "-1"}, "--rpc.getlogs-max-results must not be negative"},
		{"api, following", append(follow, "--rpc.getlogs-max-results", "-3"), "--rpc.getlogs-max-results must not be negative"},
		{"follower", append(follow, "--flashblocks.ahead", "-1"), "--flashblocks.ahead must not be negative"},
		{"follower", append(follow, "--upstream.poll", "-5ms"), "--upstream.poll must not be negative"},
		{"follower", append(follow, "--flashblocks.backoff", "1ms"), "--flashblocks.backoff 1ms is below"},
		{"follower", []string{"follow", "--upstream", "ws://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1"}, "--upstream ws://127.0.0.1:1: want a URL of scheme http or https"},
	} {
		args := tc.args
		if args[0] != "follow" {
			args = append([]string{"--datadir", t.TempDir(), "--block-time", "0"}, args...)
		}
		out, code := run(t, args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: exit %d, want 2 with %q; output:\n%s", tc.pkg, tc.args, code, tc.want, out)
		}
	}
}
