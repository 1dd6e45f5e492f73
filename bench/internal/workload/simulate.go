package workload

import (
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
)

// The eth_simulateV1 workloads: what a wallet or searcher sends before
// submitting a bundle. At "pending" (preconf and anvil) and at "latest"
// (every node; geth without a consensus client has no pending block).
func Simulations() []Workload {
	return []Workload{
		SimTransfers("pending"),
		SimTransfers("latest"),
		SimThreeBlocks("pending"),
		SimThreeBlocks("latest"),
	}
}

var (
	simFrom = common.HexToAddress("0xc000000000000000000000000000000000000000")
	simMid  = common.HexToAddress("0xc100000000000000000000000000000000000000")
	simTo   = common.HexToAddress("0xc200000000000000000000000000000000000000")
)

type simCall struct {
	From  common.Address `json:"from"`
	To    common.Address `json:"to"`
	Value string         `json:"value,omitempty"`
	Input string         `json:"input,omitempty"`
}

type simBlock struct {
	StateOverrides map[common.Address]map[string]string `json:"stateOverrides,omitempty"`
	Calls          []simCall                            `json:"calls"`
}

// funded is the balance override giving the sender 1 ETH.
func funded() map[common.Address]map[string]string {
	return map[common.Address]map[string]string{simFrom: {"balance": "0xde0b6b3a7640000"}}
}

// SimTransfers: one block, a balance override and two chained transfers.
func SimTransfers(tag string) Workload {
	req := map[string]any{"blockStateCalls": []simBlock{{
		StateOverrides: funded(),
		Calls:          []simCall{{From: simFrom, To: simMid, Value: "0x3e8"}, {From: simMid, To: simTo, Value: "0x3e8"}},
	}}}
	return Workload{Name: "eth_simulateV1/2 transfers/" + tag, Calls: 1,
		Bodies: [][]byte{load.Encode(load.NewCall(1, "eth_simulateV1", req, tag))},
		Expect: ExpectSimulated([]int{2}, nil)}
}

// SimThreeBlocks: a transfer, a call to the storage contract (reads slot 0),
// and another transfer, in three consecutive blocks.
func SimThreeBlocks(tag string) Workload {
	slot0 := harness.SlotKey(0)
	req := map[string]any{"blockStateCalls": []simBlock{
		{StateOverrides: funded(), Calls: []simCall{{From: simFrom, To: simMid, Value: "0x3e8"}}},
		{Calls: []simCall{{From: simFrom, To: harness.ContractAddr, Input: hexutil.Encode(slot0[:])}}},
		{Calls: []simCall{{From: simMid, To: simTo, Value: "0x1"}}},
	}}
	want := harness.SlotValue(0)
	return Workload{Name: "eth_simulateV1/3 blocks + contract call/" + tag, Calls: 1,
		Bodies: [][]byte{load.Encode(load.NewCall(1, "eth_simulateV1", req, tag))},
		Expect: ExpectSimulated([]int{1, 1, 1}, map[[2]int][]byte{{1, 0}: want[:]})}
}

// ExpectSimulated checks the block count, each block's call count, that
// every call succeeded, and the return data of the given calls.
func ExpectSimulated(calls []int, returns map[[2]int][]byte) func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		var blocks []struct {
			Number *hexutil.Uint64 `json:"number"`
			Calls  []struct {
				Status     hexutil.Uint64 `json:"status"`
				ReturnData hexutil.Bytes  `json:"returnData"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(got, &blocks); err != nil {
			return fmt.Errorf("result is not a list of blocks: %.200s", got)
		}
		if len(blocks) != len(calls) {
			return fmt.Errorf("%d blocks, want %d", len(blocks), len(calls))
		}
		for i, b := range blocks {
			if b.Number == nil || len(b.Calls) != calls[i] {
				return fmt.Errorf("block %d: %d calls, want %d: %.200s", i, len(b.Calls), calls[i], got)
			}
			for j, c := range b.Calls {
				if c.Status != 1 {
					return fmt.Errorf("block %d call %d failed: %.300s", i, j, got)
				}
				if want, ok := returns[[2]int{i, j}]; ok && string(want) != string(c.ReturnData) {
					return fmt.Errorf("block %d call %d returned %x, want %x", i, j, c.ReturnData, want)
				}
			}
		}
		return nil
	}
}
