package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSimulateFlagErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--simulate.state-root", "sometimes"}, "--simulate.state-root"},
		{[]string{"--rpc.evmtimeout", "-1s"}, "--rpc.evmtimeout must not be negative"},
		{[]string{"--rpc.gascap", "lots"}, "invalid value"},
		{[]string{"--gc.percent", "x"}, "invalid value"},
		{[]string{"--rpc.call-default", "safe"}, "--rpc.call-default"},
	} {
		out, code := run(t, append([]string{"--datadir", tmp, "--block-time", "0"}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %s", tc.args, code, out)
		}
	}
}

// The flags reach the engine: the state-root mode shows in eth_simulateV1,
// the gas cap in eth_estimateGas's allowance error.
func TestSimulateFlags(t *testing.T) {
	zeroRoot := `"stateRoot":"0x0000000000000000000000000000000000000000000000000000000000000000"`
	simulate := `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{}]},"latest"]}`
	for _, tc := range []struct {
		args []string
		zero bool
	}{
		{nil, true},
		{[]string{"--simulate.state-root", "compute"}, false},
	} {
		p := start(t, append([]string{"--datadir", t.TempDir(), "--block-time", "0"}, tc.args...)...)
		got := post(t, p.url, simulate)
		p.stop(t)
		if strings.Contains(got, zeroRoot) != tc.zero {
			t.Errorf("%v: zero root %v, answer %s", tc.args, !tc.zero, got)
		}
	}
	p := start(t, "--datadir", t.TempDir(), "--block-time", "0", "--rpc.gascap", "30000")
	defer p.stop(t)
	// A contract creation whose init code loops until its gas runs out.
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"data":"0x5b600056"}]}`
	resp, err := http.Post(p.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "gas required exceeds allowance (30000)") {
		t.Errorf("eth_estimateGas with --rpc.gascap 30000: %s", b)
	}
}

// --rpc.call-default reaches eth_call: a call that names no block runs in
// the pending block (head+1) with "pending", in the head with the default.
// The call's code returns NUMBER; the node sequences (pre-confirms every
// 200 ms) but seals no block during the test.
func TestCallDefaultFlag(t *testing.T) {
	number := `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"data":"0x435f5260205ff3"}%s]}`
	word := func(n int) string { return fmt.Sprintf(`"0x%064x"`, n) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, word(0)},
		{[]string{"--rpc.call-default", "latest"}, word(0)},
		{[]string{"--rpc.call-default", "pending"}, word(1)},
	} {
		p := start(t, append([]string{"--datadir", t.TempDir(), "--block-time", "1h"}, tc.args...)...)
		// Wait for the first flashblock: then "pending" is block 1.
		deadline := time.Now().Add(30 * time.Second)
		for post(t, p.url, fmt.Sprintf(number, `,"pending"`)) != word(1) {
			if time.Now().After(deadline) {
				t.Fatal("no pending block")
			}
			time.Sleep(20 * time.Millisecond)
		}
		got := post(t, p.url, fmt.Sprintf(number, ""))
		p.stop(t)
		if got != tc.want {
			t.Errorf("%v: eth_call without a block returned NUMBER %s, want %s", tc.args, got, tc.want)
		}
	}
}
