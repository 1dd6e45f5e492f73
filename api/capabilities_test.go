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
// the fixture's; the answer must have the fixture's shape (what rpc-compat
// checks) and follow the schema (EthCapabilities: exactly head and the six
// resources, no other members); and every resource must say what this
// archive node does: enabled, from genesis, never deleted (a window no block
// number leaves).
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
	var wantRaw string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "<<") {
			wantRaw = strings.TrimPrefix(line, "<<")
			if err := json.Unmarshal([]byte(wantRaw), &want); err != nil {
				t.Fatal(err)
			}
		}
	}

	out := mustCall(t, a.capabilities)
	if d := conformance.Shape([]byte(wantRaw), []byte(`{"result":`+out+`}`)); d != "" {
		t.Errorf("shape: %s", d)
	}
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
	const keepAll = `{"disabled":false,"oldestBlock":"0x0","deleteStrategy":{"type":"window","retentionBlocks":"0xffffffffffffffff"}}`
	for _, r := range []string{"state", "tx", "logs", "receipts", "blocks", "stateproofs"} {
		if string(got[r]) != keepAll {
			t.Errorf("%s = %s, want %s", r, got[r], keepAll)
		}
	}
	if _, err := call(t, a.capabilities, `1`); err == nil {
		t.Error("an argument was accepted")
	}
}
