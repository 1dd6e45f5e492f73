package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
)

// A workload is a set of JSON-RPC bodies sent round-robin and a check of each
// answer. Adding one is one entry in workloads (usually one call to a helper
// below); every node runs every workload, and the node's first answer is
// checked against the expected value before load starts (comparable state).
type Workload struct {
	Name   string
	Bodies [][]byte
	// Calls is the number of calls per body (batches); each answer must hold
	// that many results and no error.
	Calls int
	// Expect, if set, checks the first answer's "result" exactly (the state
	// is the same on every node).
	Expect func(result json.RawMessage) error
	// Conns, if set, caps the connections: calls of tens of milliseconds
	// each measure throughput and CPU without 32 of them queueing for two
	// cores past the generator's deadline.
	Conns int
}

// ConnsOr is the workload's connections, at most n.
func (w Workload) ConnsOr(n int) int {
	if w.Conns > 0 {
		return min(w.Conns, n)
	}
	return n
}

// Single is one method with fixed parameters.
func Single(method string, params []any, expect func(json.RawMessage) error) Workload {
	return Workload{Name: method, Bodies: [][]byte{load.Encode(load.NewCall(1, method, params...))}, Calls: 1, Expect: expect}
}

// Balance reads the ten funded accounts' balances at tag.
func Balance(tag string) Workload {
	w := Workload{Name: "eth_getBalance/" + tag, Calls: 1, Expect: ExpectJSON(`"` + hexutil.EncodeBig(harness.DevBalance()) + `"`)}
	for i, a := range harness.Accounts() {
		w.Bodies = append(w.Bodies, load.Encode(load.NewCall(i+1, "eth_getBalance", a, tag)))
	}
	return w
}

// Storage reads the contract's filled slots at tag. The first body reads slot
// 0, whose value the check knows.
func Storage(tag string) Workload {
	w := Workload{Name: "eth_getStorageAt/" + tag, Calls: 1, Expect: ExpectJSON(`"` + harness.SlotValue(0).Hex() + `"`)}
	for i := 0; i < harness.StorageSlots; i++ {
		slot := hexutil.EncodeBig(big.NewInt(int64(i)))
		w.Bodies = append(w.Bodies, load.Encode(load.NewCall(i+1, "eth_getStorageAt", harness.ContractAddr, slot, tag)))
	}
	return w
}

// MixedBatch is one batch of ten typical wallet/dapp reads.
func MixedBatch() Workload {
	accts := harness.Accounts()
	batch := []load.Call{
		load.NewCall(1, "eth_chainId"),
		load.NewCall(2, "eth_blockNumber"),
		load.NewCall(3, "eth_getBalance", accts[0], "latest"),
		load.NewCall(4, "eth_getBalance", accts[1], "pending"),
		load.NewCall(5, "eth_getTransactionCount", accts[0], "pending"),
		load.NewCall(6, "eth_getStorageAt", harness.ContractAddr, "0x0", "latest"),
		load.NewCall(7, "eth_getStorageAt", harness.ContractAddr, "0x1", "pending"),
		load.NewCall(8, "eth_getCode", harness.ContractAddr, "latest"),
		load.NewCall(9, "eth_getBalance", accts[2], "latest"),
		load.NewCall(10, "eth_getTransactionCount", accts[1], "latest"),
	}
	return Workload{Name: "batch/10 mixed reads", Bodies: [][]byte{load.Encode(batch)}, Calls: len(batch)}
}

func ExpectJSON(want string) func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		if !bytes.Equal(bytes.TrimSpace(got), []byte(want)) {
			return fmt.Errorf("result %.200s, want %s", got, want)
		}
		return nil
	}
}

// ExpectHead checks eth_blockNumber: 0x0 (the genesis) unless headMoves,
// set when a node under test produces blocks (preconf with its sequencer):
// the head number is then not known in advance.
func ExpectHead(headMoves bool) func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		if headMoves {
			var n hexutil.Uint64
			return json.Unmarshal(got, &n)
		}
		return ExpectJSON(`"0x0"`)(got)
	}
}

// ExpectBlock checks that the result is a block object with the given number
// (any number when headMoves).
func ExpectBlock(n uint64, headMoves bool) func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		var b struct {
			Number *hexutil.Uint64 `json:"number"`
			Hash   *common.Hash    `json:"hash"`
		}
		if err := json.Unmarshal(got, &b); err != nil || b.Number == nil || b.Hash == nil {
			return fmt.Errorf("result is not a block: %.200s", got)
		}
		if !headMoves && uint64(*b.Number) != n {
			return fmt.Errorf("block number %d, want %d", *b.Number, n)
		}
		return nil
	}
}

// Verify checks one full answer to the workload's first body: every call
// answered without error, and the first result as expected.
func (w Workload) Verify(body []byte) error {
	type answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var answers []answer
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &answers); err != nil {
			return fmt.Errorf("bad batch answer: %v: %.200s", err, body)
		}
	} else {
		var a answer
		if err := json.Unmarshal(body, &a); err != nil {
			return fmt.Errorf("bad answer: %v: %.200s", err, body)
		}
		answers = []answer{a}
	}
	if len(answers) != w.Calls {
		return fmt.Errorf("%d answers, want %d", len(answers), w.Calls)
	}
	for _, a := range answers {
		if a.Error != nil {
			return fmt.Errorf("error %d: %s", a.Error.Code, a.Error.Message)
		}
		if a.Result == nil {
			return fmt.Errorf("answer without result: %.200s", body)
		}
	}
	if w.Expect != nil {
		return w.Expect(answers[0].Result)
	}
	return nil
}

// Probe sends the workload's first body once with net/http and checks the
// answer fully, so that a node that lacks a method or holds other state
// fails loudly instead of being measured.
func (w Workload) Probe(addr string) error {
	raw, err := harness.Post(addr, w.Bodies[0])
	if err != nil {
		return err
	}
	return w.Verify(raw)
}
