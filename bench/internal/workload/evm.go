package workload

import (
	"encoding/json"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
)

// EVMCalls are the EVM-bound eth_calls at tag: the genesis's loops
// (harness/evm.go), where the interpreter and the state do the work and the
// transport little. Each call carries 30M gas, under every node's cap;
// they run on EVMConns connections.
func EVMCalls(tag string) []Workload {
	keccak := harness.KeccakLoopResult()
	return []Workload{
		evmCall("eth_call/keccak loop/"+tag, harness.KeccakLoop, tag, ExpectJSON(`"`+keccak.Hex()+`"`)),
		evmCall("eth_call/500 fresh SSTOREs/"+tag, harness.FreshStores, tag, ExpectJSON(`"0x"`)),
		evmCall("eth_call/warm SLOAD loop/"+tag, harness.WarmLoads, tag, ExpectJSON(`"0x"`)),
	}
}

func evmCall(name string, to common.Address, tag string, expect func(json.RawMessage) error) Workload {
	tx := map[string]any{"to": to, "gas": "0x1c9c380"}
	return Workload{Name: name, Calls: 1, Bodies: [][]byte{load.Encode(load.NewCall(1, "eth_call", tx, tag))}, Expect: expect, Conns: EVMConns}
}

// EVMConns are the EVM-bound calls' connections: two per core here, enough
// to keep every core busy.
const EVMConns = 4
