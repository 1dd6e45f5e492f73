package main

import (
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// The eth_simulateV1 workloads: what a wallet or searcher sends before
// submitting a bundle. At "pending" (preconf and anvil) and at "latest"
// (every node; geth without a consensus client has no pending block).
func simulateWorkloads() []workload {
	return []workload{
		simTransfers("pending"),
		simTransfers("latest"),
		simThreeBlocks("pending"),
		simThreeBlocks("latest"),
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

// simTransfers: one block, a balance override and two chained transfers.
func simTransfers(tag string) workload {
	req := map[string]any{"blockStateCalls": []simBlock{{
		StateOverrides: funded(),
		Calls:          []simCall{{From: simFrom, To: simMid, Value: "0x3e8"}, {From: simMid, To: simTo, Value: "0x3e8"}},
	}}}
	return workload{Name: "eth_simulateV1/2 transfers/" + tag, Calls: 1,
		Bodies: [][]byte{encode(newCall(1, "eth_simulateV1", req, tag))},
		Expect: expectSimulated([]int{2}, nil)}
}

// simThreeBlocks: a transfer, a call to the storage contract (reads slot 0),
// and another transfer, in three consecutive blocks.
func simThreeBlocks(tag string) workload {
	slot0 := slotKey(0)
	req := map[string]any{"blockStateCalls": []simBlock{
		{StateOverrides: funded(), Calls: []simCall{{From: simFrom, To: simMid, Value: "0x3e8"}}},
		{Calls: []simCall{{From: simFrom, To: contractAddr, Input: hexutil.Encode(slot0[:])}}},
		{Calls: []simCall{{From: simMid, To: simTo, Value: "0x1"}}},
	}}
	want := slotValue(0)
	return workload{Name: "eth_simulateV1/3 blocks + contract call/" + tag, Calls: 1,
		Bodies: [][]byte{encode(newCall(1, "eth_simulateV1", req, tag))},
		Expect: expectSimulated([]int{1, 1, 1}, map[[2]int][]byte{{1, 0}: want[:]})}
}

// expectSimulated checks the block count, each block's call count, that
// every call succeeded, and the return data of the given calls.
func expectSimulated(calls []int, returns map[[2]int][]byte) func(json.RawMessage) error {
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
