package clients_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// Deploy a contract and use it in the next transaction before the seal,
// with viem, ethers (a Uniswap v2 pool: deploy, createPair, add liquidity,
// swap) and web3.js, each library choosing nonces, fees and gas
// (deploy.test.mjs).
func TestDeployThenUse(t *testing.T) {
	nodeTests(t, slowNode(t), []string{"deploy.test.mjs"}, map[string]int{"VIEM": 5, "ETHERS": 6, "WEB3": 7})
}

// What works with cast, as the README says: cast reads the nonce at
// "latest", which lags pre-confirmed transactions, so a script passes
// --nonce from `cast nonce --block pending`: twice in a row with waits
// (cast send prints the pre-confirmed receipt), as an --async chain of
// consecutive nonces, and twice with --sync.
func TestCastPendingNonce(t *testing.T) {
	n := slowNode(t)
	cast := castBin(t)
	key := devKey(8)
	from := addressOf(t, 8)
	to := "0x00000000000000000000000000000000000000c8"
	rpcURL := []string{"--rpc-url", n.http}
	run(t, cast, append([]string{"rpc", "evm_mine"}, rpcURL...)) // a fresh block: nothing below is sealed
	pendingNonce := func() uint64 {
		out := strings.TrimSpace(run(t, cast, append([]string{"nonce", "--block", "pending", from}, rpcURL...)))
		v, err := strconv.ParseUint(out, 10, 64)
		if err != nil {
			t.Fatalf("cast nonce printed %q", out)
		}
		return v
	}
	start := pendingNonce()
	for i := range uint64(2) {
		nonce := strconv.FormatUint(pendingNonce(), 10)
		out := run(t, cast, append([]string{"send", "--private-key", key, "--nonce", nonce, to, "--value", "1"}, rpcURL...))
		if !regexpLine(out, "status", "1 (success)") {
			t.Fatalf("send %d (nonce %s) did not succeed:\n%s", i, nonce, out)
		}
	}
	next := pendingNonce()
	if next != start+2 {
		t.Fatalf("pending nonce %d after two sends from %d", next, start)
	}
	var hashes []string
	for i := range uint64(3) {
		out := run(t, cast, append([]string{"send", "--async", "--private-key", key, "--nonce", strconv.FormatUint(next+i, 10), to, "--value", "1"}, rpcURL...))
		hashes = append(hashes, strings.TrimSpace(out))
	}
	for _, h := range hashes {
		out := run(t, cast, append([]string{"receipt", h}, rpcURL...))
		if !regexpLine(out, "status", "1 (success)") {
			t.Fatalf("--async send %s:\n%s", h, out)
		}
	}
	if got := pendingNonce(); got != start+5 {
		t.Fatalf("pending nonce %d after five sends from %d", got, start)
	}
	// --sync (eth_sendRawTransactionSync) prints the pre-confirmed receipt
	// from the one call; with the pending nonce, twice in a row.
	for i := range uint64(2) {
		nonce := strconv.FormatUint(start+5+i, 10)
		out := run(t, cast, append([]string{"send", "--sync", "--private-key", key, "--nonce", nonce, to, "--value", "1"}, rpcURL...))
		if !regexpLine(out, "status", "1 (success)") {
			t.Fatalf("--sync send %d (nonce %s) did not succeed:\n%s", i, nonce, out)
		}
	}
	if got := pendingNonce(); got != start+7 {
		t.Fatalf("pending nonce %d after seven sends from %d", got, start)
	}
	if out := strings.TrimSpace(run(t, cast, append([]string{"nonce", from}, rpcURL...))); out != strconv.FormatUint(start, 10) {
		t.Fatalf("cast nonce (latest) = %s: something was sealed during the test, or latest counts pre-confirmed transactions", out)
	}
}

func addressOf(t *testing.T, i int) string {
	t.Helper()
	k, err := crypto.HexToECDSA(chain.DevKeys[i])
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(k.PublicKey).Hex()
}
