package clients_test

import (
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCastCheatFlow runs a Foundry-style flow through cast — fund an
// account, impersonate it and send from it with --unlocked, set code and
// storage, snapshot, warp time, mine, revert — against preconf (with
// --automine, as anvil mines by default) and against anvil 1.7.1, and
// requires the same answers. Reads are at "pending", where preconf's
// cheats and pre-confirmations show at once (anvil answers pending from
// the same state as latest after a cheat). preconf runs its default chain,
// the OP-stack one: the flow compares no fee (an L1 data fee is charged
// there, none on anvil's chain).
func TestCastCheatFlow(t *testing.T) {
	needNode(t)
	cast := castBin(t)
	anvilURL := startAnvil(t)
	n := startNode(t, "--automine")
	results := map[string][]string{}
	for name, url := range map[string]string{"preconf": n.http, "anvil": anvilURL} {
		results[name] = castFlow(t, cast, url)
	}
	p, a := results["preconf"], results["anvil"]
	if len(p) != len(a) {
		t.Fatalf("preconf answered %d steps, anvil %d:\n%s\n---\n%s", len(p), len(a), strings.Join(p, "\n"), strings.Join(a, "\n"))
	}
	for i := range p {
		if p[i] != a[i] {
			t.Errorf("step %d: preconf %q, anvil %q", i, p[i], a[i])
		}
	}
	if !t.Failed() {
		t.Logf("%d steps, identical answers:\n%s", len(p), strings.Join(p, "\n"))
	}
}

// castFlow runs the flow against url and returns each step's answer, named.
func castFlow(t *testing.T, cast, url string) []string {
	const (
		// Above 0xff: an OP-stack genesis (preconf's default chain) funds
		// the precompile addresses 0x00…0xff with 1 wei, anvil's does not.
		whale    = "0x00000000000000000000000000000000000001d1"
		to       = "0x00000000000000000000000000000000000001d2"
		contract = "0x00000000000000000000000000000000000001d3"
		slot     = "0x000000000000000000000000000000000000000000000000000000000000002a"
	)
	var out []string
	step := func(name string, args ...string) string {
		t.Helper()
		res, err := runErr(t, cast, append(args, "--rpc-url", url))
		res = strings.TrimSpace(res)
		if err != nil {
			res = "error"
		}
		out = append(out, name+": "+res)
		return res
	}
	pending := []string{"--block", "pending"}
	step("setBalance", "rpc", "anvil_setBalance", whale, "0x3635c9adc5dea00000") // 1000 ether
	step("balance", append([]string{"balance", whale}, pending...)...)
	step("impersonate", "rpc", "anvil_impersonateAccount", whale)
	receipt := step("send --unlocked", "send", "--unlocked", "--from", whale, to, "--value", "1000")
	out[len(out)-1] = "send status: " + fieldOf(receipt, "status")
	step("recipient balance", append([]string{"balance", to}, pending...)...)
	step("whale nonce", append([]string{"nonce", whale}, pending...)...)
	step("snapshot", "rpc", "evm_snapshot")
	step("setBalance 2", "rpc", "anvil_setBalance", to, "5")
	step("recipient balance 2", append([]string{"balance", to}, pending...)...)
	step("setCode", "rpc", "anvil_setCode", contract, "0x602a60005260206000f3")
	step("code", append([]string{"code", contract}, pending...)...)
	step("call", append([]string{"call", contract}, pending...)...)
	step("setStorageAt", "rpc", "anvil_setStorageAt", contract, "0x0", slot)
	step("storage", append([]string{"storage", contract, "0"}, pending...)...)
	step("setNonce", "rpc", "anvil_setNonce", whale, "0x10")
	step("nonce", append([]string{"nonce", whale}, pending...)...)
	before := step("time before", "block", "latest", "--field", "timestamp")
	out = out[:len(out)-1] // the clocks differ; the warp must not
	step("increaseTime", "rpc", "evm_increaseTime", "86400")
	step("mine", "rpc", "evm_mine")
	after := step("time after", "block", "latest", "--field", "timestamp")
	out[len(out)-1] = fmt.Sprintf("warped a day: %v", warped(before, after, 86400))
	step("revert", "rpc", "evm_revert", "0x0")
	step("revert again", "rpc", "evm_revert", "0x0")
	step("recipient balance reverted", append([]string{"balance", to}, pending...)...)
	step("code reverted", append([]string{"code", contract}, pending...)...)
	step("storage reverted", append([]string{"storage", contract, "0"}, pending...)...)
	step("nonce reverted", append([]string{"nonce", whale}, pending...)...)
	step("stop impersonating", "rpc", "anvil_stopImpersonatingAccount", whale)
	step("send refused", "send", "--unlocked", "--from", whale, to, "--value", "1")
	step("auto impersonate", "rpc", "anvil_autoImpersonateAccount", "true")
	step("fund recipient", "rpc", "anvil_addBalance", to, "0xde0b6b3a7640000")
	was := step("whale balance", append([]string{"balance", whale}, pending...)...)
	out = out[:len(out)-1] // it paid the first send's fee, each chain's own
	receipt = step("send auto-impersonated", "send", "--unlocked", "--from", to, whale, "--value", "7")
	out[len(out)-1] = "send auto-impersonated status: " + fieldOf(receipt, "status")
	now := step("whale balance after", append([]string{"balance", whale}, pending...)...)
	out[len(out)-1] = "whale received: " + difference(now, was) // fees are each chain's own
	return out
}

// difference is a-b of two decimal numbers.
func difference(a, b string) string {
	x, ok1 := new(big.Int).SetString(a, 10)
	y, ok2 := new(big.Int).SetString(b, 10)
	if !ok1 || !ok2 {
		return "not numbers: " + a + ", " + b
	}
	return x.Sub(x, y).String()
}

// fieldOf is the value of a field line of cast's receipt output.
func fieldOf(out, field string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			return strings.Join(f[1:], " ")
		}
	}
	return "missing " + field
}

// warped reports whether after is at least secs after before.
func warped(before, after string, secs uint64) bool {
	b, err1 := strconv.ParseUint(before, 10, 64)
	a, err2 := strconv.ParseUint(after, 10, 64)
	return err1 == nil && err2 == nil && a >= b+secs
}

func anvilBin(t *testing.T) string {
	t.Helper()
	return tool(t, filepath.Join(repoRoot(), "tests/clients/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"), "anvil")
}

// startAnvil runs anvil on a free loopback port until the test ends.
func startAnvil(t *testing.T) string {
	t.Helper()
	bin := anvilBin(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--silent")
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`)); err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatal("anvil did not start")
		}
	}
}
