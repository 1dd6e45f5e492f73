package seqapi_test

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// TestBuildBlockParams: testing_buildBlockV1's parameters as the
// execution-apis fixtures send them, and bad ones (-32602).
func TestBuildBlockParams(t *testing.T) {
	h, srv := serve(newManualHarness(t, 0))
	defer h.stop()
	head := h.chain.Head()
	attrs := map[string]any{"timestamp": hexutil.EncodeUint64(head.Time + 1), "prevRandao": common.Hash{}, "suggestedFeeRecipient": common.Address{},
		"withdrawals": []any{}, "parentBeaconBlockRoot": common.Hash{1}}
	r := call(t, srv, "testing_buildBlockV1", head.Hash(), attrs, nil, "0x")
	var res struct {
		ExecutionPayload map[string]any `json:"executionPayload"`
		BlockValue       string         `json:"blockValue"`
		Requests         []any          `json:"executionRequests"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.ExecutionPayload["blockNumber"] != "0x1" || res.Requests == nil || res.BlockValue != "0x0" {
		t.Fatalf("build: %s %+v", r.Result, r.Error)
	}
	if _, ok := res.ExecutionPayload["slotNumber"]; ok {
		t.Errorf("slotNumber in the payload (go-ethereum leaves it out while unset): %v", res.ExecutionPayload)
	}
	for name, params := range map[string][]any{
		"no attributes":   {head.Hash()},
		"no timestamp":    {head.Hash(), map[string]any{"prevRandao": common.Hash{}, "suggestedFeeRecipient": common.Address{}}},
		"bad transaction": {head.Hash(), attrs, []any{"0x01"}},
		"long extraData":  {head.Hash(), attrs, nil, hexutil.Bytes(make([]byte, 33))},
		"too many":        {head.Hash(), attrs, nil, "0x", 1},
	} {
		if r := call(t, srv, "testing_buildBlockV1", params...); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: %s %+v, want -32602", name, r.Result, r.Error)
		}
	}
}
