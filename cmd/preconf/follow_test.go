package main

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

func TestFollowFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"follow"}, 2, "--upstream is required"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1"}, 2, "--flashblocks is required"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--proofs", "maybe"}, 2, "bad --proofs"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--http.port", "0"}, 1, "upstream unavailable"},
		{[]string{"follow", "--nope"}, 2, "flag provided but not defined"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--flashblocks.ping", "-1s"}, 2, "--flashblocks.ping must not be negative"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "nope"}, 2, "not in op-geth's superchain registry (known: "},
		// Base retired flashblocks at Denim; a chain at a fork preconf does not implement is refused
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "base"}, 1, "Base Mainnet, which retired flashblocks at its Denim upgrade (2026-11-05 18:00 UTC)"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "base-sepolia"}, 1, "Base Sepolia, which retired flashblocks"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--genesis", genesisFile(t, 8453, nil)}, 1, "retired flashblocks at its Denim upgrade"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--genesis", genesisFile(t, 901, new(uint64))}, 1, "activates Lagoon (at time 0), which preconf does not implement"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "op", "--hardfork", "jovian"}, 2, "--hardfork picks the forks of the built-in OP-stack dev chain"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--hardfork", "lagoon"}, 2, `--hardfork "lagoon": the dev chain runs isthmus, jovian or karst`},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "op", "--genesis", "g.json"}, 2, "--chain, --genesis and --l1 are exclusive"},
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "op", "--l1"}, 2, "--chain, --genesis and --l1 are exclusive"},
		// a registry chain loads; then the (dead) upstream is the problem
		{[]string{"follow", "--upstream", "http://127.0.0.1:1", "--flashblocks", "ws://127.0.0.1:1", "--chain", "unichain-sepolia", "--http.port", "0"}, 1, "upstream unavailable"},
	} {
		out, code := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q; output:\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}

// genesisFile writes an OP-stack genesis of chain id with Lagoon at lagoon
// (nil: not scheduled).
func genesisFile(t *testing.T, id int64, lagoon *uint64) string {
	cfg := *params.OptimismTestConfig
	cfg.ChainID, cfg.LagoonTime = big.NewInt(id), lagoon
	if lagoon != nil {
		zero := uint64(0)
		cfg.KarstTime = &zero
	}
	raw, err := json.Marshal(&core.Genesis{Config: &cfg, GasLimit: 30_000_000, Difficulty: new(big.Int), BaseFee: big.NewInt(1), Alloc: types.GenesisAlloc{}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "genesis.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFollowCommand runs a sequencing node and `preconf follow` of it as
// processes: a transaction sent through the follower (forwarded) is
// pre-confirmed, and the follower's pending answers equal the sequencer's.
func TestFollowCommand(t *testing.T) {
	seq := start(t, "--datadir", t.TempDir(), "--block-time", "1s")
	defer seq.stop(t)
	ws := "ws" + strings.TrimPrefix(seq.url, "http") + "/flashblocks"
	fol := start(t, "follow", "--upstream", seq.url, "--flashblocks", ws, "--datadir", t.TempDir(), "--upstream.poll", "20ms")
	defer fol.stop(t)

	hash := post(t, fol.url, `{"jsonrpc":"2.0","id":1,"method":"eth_sendTransaction","params":[{"from":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","to":"0x000000000000000000000000000000000000aa00","value":"0x1234"}]}`)
	receipt := `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":[` + hash + `]}`
	deadline := time.Now().Add(30 * time.Second)
	for post(t, fol.url, receipt) == "null" {
		if time.Now().After(deadline) {
			t.Fatalf("transaction %s never visible on the follower:\n%s", hash, fol.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x000000000000000000000000000000000000aa00","pending"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","pending"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`,
	} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, want := post(t, fol.url, body), post(t, seq.url, body)
			if got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: follower %s, sequencer %s", body, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := post(t, fol.url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x000000000000000000000000000000000000aa00","pending"]}`); got != `"0x1234"` {
		t.Fatalf("pending balance %s", got)
	}
}

// TestFollowFlagsFromEnvironment: every flag can come from PRECONF_<FLAG>.
func TestFollowFlagsFromEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "follow")
	cmd.Env = append(cleanEnv(), "PRECONF_UPSTREAM=http://127.0.0.1:1", "PRECONF_FLASHBLOCKS=ws://127.0.0.1:1", "PRECONF_PROOFS=off", "PRECONF_HTTP_PORT=0")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "upstream unavailable: http://127.0.0.1:1") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
	cmd = exec.CommandContext(ctx, binary, "follow")
	cmd.Env = append(cleanEnv(), "PRECONF_UPSTREAM=http://127.0.0.1:1", "PRECONF_FLASHBLOCKS=ws://127.0.0.1:1", "PRECONF_PROOFS=sometimes")
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "bad --proofs") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
}
