package clients_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/peers"
)

// Foundry's own workflows against the dev chain, with forge 1.7.1 from npm
// compiling the project in tests/clients/forge through solc-js (solc.cjs):
// `forge script --broadcast` (deploy and use a contract: pre-confirmed,
// not yet sealed), the same script again before the seal (refused: forge
// simulates at "latest", as the README says), `forge create --nonce` from
// the pending count before the seal, the script again after `evm_mine`,
// `forge test --fork-url` with cheatcodes over the node's state, and
// scripts back to back under --automine.
func TestForge(t *testing.T) {
	needNode(t)
	forge := tool(t, filepath.Join(repoRoot(), "tests/clients/node_modules/@foundry-rs/forge-linux-amd64/bin/forge"), "forge")
	tool(t, filepath.Join(repoRoot(), "tests/clients/node_modules/solc/package.json"), "solc (solc-js)")
	cast := castBin(t)
	nodeBin, err := peers.Node(repoRoot())
	if err != nil {
		peers.Missing(t, err.Error())
	}
	// Its own node: seals only on evm_mine, so nothing here races a seal.
	n, err := startPreconf("--block-time", "10m")
	if err != nil {
		t.Fatal(err)
	}
	defer n.stop()
	proj := forgeProject(t, nodeBin)
	rpcURL := []string{"--rpc-url", n.http}
	key := devKey(0)
	// script broadcasts Deploy.s.sol to the node at url: it deploys a
	// Counter and sets it to setTo, then increments it.
	script := func(url string, setTo int) (string, error) {
		return forgeRun(t, forge, proj, []string{"script", "script/Deploy.s.sol", "--broadcast", "--private-key", key, "--rpc-url", url},
			"SET_TO="+strconv.Itoa(setTo))
	}
	number := func(addr, block string) string {
		return strings.TrimSpace(run(t, cast, append([]string{"call", "--block", block, addr, "number()(uint256)"}, rpcURL...)))
	}

	// 1. Three transactions, sent by forge at once, pre-confirmed in nonce
	// order; forge's receipts are the pre-confirmed ones.
	if out, err := script(n.http, 42); err != nil {
		t.Fatalf("forge script: %v\n%s", err, out)
	}
	first := broadcastResult(t, proj, 3)
	if got := number(first, "pending"); got != "43" {
		t.Fatalf("Counter.number() at pending = %s, want 43", got)
	}
	if code := strings.TrimSpace(run(t, cast, append([]string{"code", first}, rpcURL...))); code != "0x" {
		t.Fatalf("the script's Counter has code at latest before any seal: %.40s", code)
	}

	// 2. The same script before the seal: forge reads the nonce and state
	// at "latest", so it signs nonces the pending block already holds.
	out, err := script(n.http, 42)
	if err == nil || !strings.Contains(out, "nonce too low") || !strings.Contains(out, `"pending"`) {
		t.Fatalf("forge script before the seal: err %v, want the node's nonce-too-low answer naming \"pending\":\n%s", err, out)
	}

	// 3. forge create takes --nonce: from the pending count it deploys
	// before the seal, as cast send does.
	nonce := strings.TrimSpace(run(t, cast, append([]string{"nonce", "--block", "pending", addressOf(t, 0)}, rpcURL...)))
	out, err = forgeRun(t, forge, proj, append([]string{"create", "src/Counter.sol:Counter", "--broadcast", "--private-key", key, "--nonce", nonce}, rpcURL...))
	if err != nil || !strings.Contains(out, "Deployed to:") {
		t.Fatalf("forge create --nonce %s (the pending nonce) before the seal: %v\n%s", nonce, err, out)
	}

	// 4. After the seal it runs again, from the sealed nonce.
	run(t, cast, append([]string{"rpc", "evm_mine"}, rpcURL...))
	if got := number(first, "latest"); got != "43" {
		t.Fatalf("Counter.number() at latest after evm_mine = %s, want 43", got)
	}
	if out, err := script(n.http, 100); err != nil {
		t.Fatalf("forge script after evm_mine: %v\n%s", err, out)
	}
	if second := broadcastResult(t, proj, 3); second == first || number(second, "pending") != "101" {
		t.Fatalf("second Counter %s (first %s): number at pending %s, want 101", second, first, number(second, "pending"))
	}

	// 5. forge test over the node's state (forked at latest, where the first
	// Counter is sealed); cheatcodes change only forge's copy.
	out, err = forgeRun(t, forge, proj, []string{"test", "--fork-url", n.http, "--no-storage-caching"},
		"COUNTER="+first, "WANT_NUMBER=43", "CHAIN_ID="+strconv.Itoa(chain.DevChainID), "DEV_ACCOUNT="+addressOf(t, 0))
	t.Logf("forge test:\n%s", out)
	if err != nil || !strings.Contains(out, "2 passed; 0 failed") {
		t.Fatalf("forge test --fork-url: %v", err)
	}
	if got := number(first, "pending"); got != "43" {
		t.Fatalf("forge test's cheats reached the node: number %s at pending, want 43", got)
	}

	// 6. With --automine (a block per transaction, as anvil) scripts run
	// back to back.
	auto, err := startPreconf("--automine")
	if err != nil {
		t.Fatal(err)
	}
	defer auto.stop()
	var created []string
	for i := range 2 {
		out, err := script(auto.http, 7)
		if err != nil {
			t.Fatalf("forge script %d under --automine: %v\n%s", i+1, err, out)
		}
		created = append(created, broadcastResult(t, proj, 3))
	}
	if created[0] == created[1] {
		t.Fatalf("both scripts under --automine created %s", created[0])
	}
}

// forgeProject copies tests/clients/forge into a temporary directory with
// a foundry.toml that compiles offline through solc.cjs.
func forgeProject(t *testing.T, nodeBin string) string {
	t.Helper()
	src := filepath.Join(repoRoot(), "tests", "clients", "forge")
	proj := t.TempDir()
	if err := os.CopyFS(proj, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	solc := filepath.Join(proj, "solc")
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %s %s \"$@\"\n", strconv.Quote(nodeBin), strconv.Quote(filepath.Join(src, "solc.cjs")))
	config := fmt.Sprintf("[profile.default]\nsrc = \"src\"\nout = \"out\"\nlibs = []\noffline = true\nsolc = %s\n", strconv.Quote(solc))
	if err := os.WriteFile(solc, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "foundry.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return proj
}

// forgeRun runs forge in proj, uncoloured, and returns its combined output.
func forgeRun(t *testing.T, forge, proj string, args []string, env ...string) (string, error) {
	t.Helper()
	return runIn(t, proj, forge, args, append(env, "NO_COLOR=1")...)
}

// broadcastResult checks forge's record of the last broadcast of
// Deploy.s.sol (want receipts, every one successful) and returns the
// address of the contract it created.
func broadcastResult(t *testing.T, proj string, want int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(proj, "broadcast", "Deploy.s.sol", strconv.Itoa(chain.DevChainID), "run-latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Transactions []struct {
			ContractAddress string `json:"contractAddress"`
		} `json:"transactions"`
		Receipts []struct {
			Status string `json:"status"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Receipts) != want || len(run.Transactions) != want {
		t.Fatalf("broadcast: %d transactions, %d receipts, want %d", len(run.Transactions), len(run.Receipts), want)
	}
	for i, r := range run.Receipts {
		if r.Status != "0x1" {
			t.Fatalf("broadcast receipt %d: status %s", i, r.Status)
		}
	}
	if run.Transactions[0].ContractAddress == "" {
		t.Fatal("broadcast: the first transaction created no contract")
	}
	return run.Transactions[0].ContractAddress
}
