package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/conformance"
)

// TestCapabilities checks eth_capabilities on the execution-apis chain
// against its fixture (a "speconly" one: the resources describe the
// recording node's pruning, not ours). The head is derivable and must equal
// the fixture's; the shape must follow the schema (EthCapabilities: exactly
// head and the six resources, no other members); and every resource must
// say what this archive node does: enabled, from genesis, never deleted.
func TestCapabilities(t *testing.T) {
	a, _ := executionAPIsChain(t)
	raw, err := os.ReadFile(filepath.Join(conformance.Dir(), "tests", "eth_capabilities", "get-capabilities.io"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Result struct {
			Head json.RawMessage `json:"head"`
		} `json:"result"`
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "<<") {
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "<<")), &want); err != nil {
				t.Fatal(err)
			}
		}
	}

	out := mustCall(t, a.capabilities)
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if wantKeys := []string{"blocks", "head", "logs", "receipts", "state", "stateproofs", "tx"}; !slices.Equal(keys, wantKeys) {
		t.Errorf("members %v, want %v", keys, wantKeys)
	}
	if string(got["head"]) != string(want.Result.Head) {
		t.Errorf("head %s, want %s", got["head"], want.Result.Head)
	}
	var head struct {
		Number *hexutil.Uint64 `json:"number"`
		Hash   *common.Hash    `json:"hash"`
	}
	if err := json.Unmarshal(got["head"], &head); err != nil || head.Number == nil || head.Hash == nil {
		t.Errorf("head %s: %v", got["head"], err)
	}
	for _, r := range capabilityResources {
		var res map[string]json.RawMessage
		if err := json.Unmarshal(got[r], &res); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if len(res) != 2 || string(res["disabled"]) != "false" || string(res["oldestBlock"]) != `"0x0"` {
			t.Errorf("%s = %s, want enabled from block 0 with no delete strategy", r, got[r])
		}
	}
	if _, err := call(t, a.capabilities, `1`); err == nil {
		t.Error("an argument was accepted")
	}
}
