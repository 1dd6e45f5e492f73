// Dev-chain workflows of issue 11 as scripts run them: back-to-back sends
// with library-chosen nonces (the pool-aware pending nonce), cast sending
// twice (the error naming the pending nonce), safe and finalized on a fresh
// chain, and manual mining with --block-time 0. anvil passes the same
// scripts (automine, --block-time 2, --no-mining).

package clients_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// viem and ethers send five transactions back to back, ethers deploys five
// contracts back to back (sends.test.mjs): every nonce comes from
// eth_getTransactionCount(addr, "pending"), which counts the sender's
// transactions waiting in the pool for the next flashblock. Before the pool
// nonce the second send reused the first nonce (viem: "replacement
// transaction underpriced", ethers: "nonce has already been used").
func TestBackToBackSends(t *testing.T) {
	nodeTests(t, slowNode(t), []string{"sends.test.mjs"}, map[string]int{"VIEM": 1, "ETHERS": 2, "ETHERS_DEPLOY": 3})
}

// cast send twice in a row: cast 1.7 reads the nonce at "latest", which
// lags the pre-confirmed receipt it just printed, so the second send reuses
// the nonce. That stays so (latest is sealed state); the node's error must
// explain it: name the pending nonce and say to read nonces at "pending"
// (it used to say only "nonce too low: next nonce 1, tx nonce 0").
func TestCastSendTwice(t *testing.T) {
	n := slowNode(t)
	cast := castBin(t)
	rpcURL := []string{"--rpc-url", n.http}
	run(t, cast, append([]string{"rpc", "evm_mine"}, rpcURL...)) // nothing below gets sealed
	send := func() (string, error) {
		return runErr(t, cast, append([]string{"send", "--private-key", devKey(9), "0x00000000000000000000000000000000000000cb", "--value", "1"}, rpcURL...))
	}
	if out, err := send(); err != nil {
		t.Fatalf("first send: %v\n%s", err, out)
	}
	out, err := send()
	if err == nil {
		t.Fatalf("the second send succeeded: was a block sealed in between?\n%s", out)
	}
	pending := strings.TrimSpace(run(t, cast, append([]string{"nonce", "--block", "pending", addressOf(t, 9)}, rpcURL...)))
	if !strings.Contains(out, "pending") || !regexp.MustCompile(`\b`+pending+`\b`).MatchString(out) {
		t.Fatalf("the error does not name the pending nonce %s and the \"pending\" tag:\n%s", pending, out)
	}
}

// safe and finalized on a fresh chain are block 0 (cast and
// safe.test.mjs), as anvil answers them (it used to be -32000 "safe block
// not found" until 32 blocks existed).
func TestSafeFinalizedFreshChain(t *testing.T) {
	needNode(t)
	n := startNode(t)
	cast := castBin(t)
	rpcURL := []string{"--rpc-url", n.http}
	for _, tag := range []string{"safe", "finalized"} {
		number := strings.TrimSpace(run(t, cast, append([]string{"block", tag, "--field", "number"}, rpcURL...)))
		latest, _ := strconv.Atoi(strings.TrimSpace(run(t, cast, append([]string{"block-number"}, rpcURL...))))
		if latest < 32 && number != "0" {
			t.Errorf("cast block %s: number %s with latest %d, want 0", tag, number, latest)
		}
		if bal := strings.TrimSpace(run(t, cast, append([]string{"balance", "--block", tag, addressOf(t, 0)}, rpcURL...))); bal != "10000000000000000000000" {
			t.Errorf("cast balance --block %s: %s", tag, bal)
		}
	}
	nodeTests(t, n, []string{"safe.test.mjs"}, nil)
}

// Manual mining: with --block-time 0 transactions are pooled and a block is
// sealed on evm_mine / anvil_mine (cast, and mining.test.mjs with viem's
// test client and ethers), as with anvil --no-mining.
func TestManualMining(t *testing.T) {
	needNode(t)
	n := startNode(t, "--block-time", "0")
	cast := castBin(t)
	rpcURL := []string{"--rpc-url", n.http}
	hash := strings.TrimSpace(run(t, cast, append([]string{"send", "--async", "--private-key", devKey(0), "0x00000000000000000000000000000000000000cc", "--value", "1"}, rpcURL...)))
	if got := strings.TrimSpace(run(t, cast, append([]string{"block-number"}, rpcURL...))); got != "0" {
		t.Fatalf("block %s sealed before evm_mine", got)
	}
	run(t, cast, append([]string{"rpc", "evm_mine"}, rpcURL...))
	out := run(t, cast, append([]string{"receipt", hash}, rpcURL...))
	if !regexpLine(out, "status", "1 (success)") || !regexpLine(out, "blockNumber", "1") {
		t.Fatalf("after evm_mine, receipt of %s:\n%s", hash, out)
	}
	nodeTests(t, n, []string{"mining.test.mjs"}, map[string]int{"VIEM": 1, "ETHERS": 2})
}

// startNode starts a node for one test, stopped when the test ends.
func startNode(t *testing.T, args ...string) *preconfNode {
	t.Helper()
	n, err := startPreconf(args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	return n
}
