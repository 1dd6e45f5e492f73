package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// A workload is a set of JSON-RPC bodies sent round-robin and a check of each
// answer. Adding one is one entry in workloads (usually one call to a helper
// below); every node runs every workload, and the node's first answer is
// checked against the expected value before load starts (comparable state).
type workload struct {
	Name   string
	Bodies [][]byte
	// Calls is the number of calls per body (batches); each answer must hold
	// that many results and no error.
	Calls int
	// Expect, if set, checks the first answer's "result" exactly (the state
	// is the same on every node).
	Expect func(result json.RawMessage) error
}

// workloads are run in this order.
func workloads() []workload {
	return append([]workload{
		balance("latest"),
		balance("pending"),
		storage("latest"),
		storage("pending"),
		single("eth_blockNumber", nil, expectHead()),
		single("eth_getBlockByNumber", []any{"latest", false}, expectBlock(0)),
		mixedBatch(),
	}, simulateWorkloads()...) // bench/simulate.go
}

// call is one JSON-RPC request object.
type call struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode request: %v", err)) // static shapes only
	}
	return b
}

func newCall(id int, method string, params ...any) call {
	if params == nil {
		params = []any{}
	}
	return call{JSONRPC: "2.0", ID: id, Method: method, Params: params}
}

// single is one method with fixed parameters.
func single(method string, params []any, expect func(json.RawMessage) error) workload {
	return workload{Name: method, Bodies: [][]byte{encode(newCall(1, method, params...))}, Calls: 1, Expect: expect}
}

// balance reads the ten funded accounts' balances at tag.
func balance(tag string) workload {
	w := workload{Name: "eth_getBalance/" + tag, Calls: 1, Expect: expectJSON(`"` + hexutil.EncodeBig(devBalance()) + `"`)}
	for i, a := range benchAccounts() {
		w.Bodies = append(w.Bodies, encode(newCall(i+1, "eth_getBalance", a, tag)))
	}
	return w
}

// storage reads the contract's filled slots at tag. The first body reads slot
// 0, whose value the check knows.
func storage(tag string) workload {
	w := workload{Name: "eth_getStorageAt/" + tag, Calls: 1, Expect: expectJSON(`"` + slotValue(0).Hex() + `"`)}
	for i := 0; i < storageSlots; i++ {
		slot := hexutil.EncodeBig(big.NewInt(int64(i)))
		w.Bodies = append(w.Bodies, encode(newCall(i+1, "eth_getStorageAt", contractAddr, slot, tag)))
	}
	return w
}

// mixedBatch is one batch of ten typical wallet/dapp reads.
func mixedBatch() workload {
	accts := benchAccounts()
	batch := []call{
		newCall(1, "eth_chainId"),
		newCall(2, "eth_blockNumber"),
		newCall(3, "eth_getBalance", accts[0], "latest"),
		newCall(4, "eth_getBalance", accts[1], "pending"),
		newCall(5, "eth_getTransactionCount", accts[0], "pending"),
		newCall(6, "eth_getStorageAt", contractAddr, "0x0", "latest"),
		newCall(7, "eth_getStorageAt", contractAddr, "0x1", "pending"),
		newCall(8, "eth_getCode", contractAddr, "latest"),
		newCall(9, "eth_getBalance", accts[2], "latest"),
		newCall(10, "eth_getTransactionCount", accts[1], "latest"),
	}
	return workload{Name: "batch/10 mixed reads", Bodies: [][]byte{encode(batch)}, Calls: len(batch)}
}

func expectJSON(want string) func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		if !bytes.Equal(bytes.TrimSpace(got), []byte(want)) {
			return fmt.Errorf("result %.200s, want %s", got, want)
		}
		return nil
	}
}

// headMoves is set when a node under test produces blocks (preconf with its
// sequencer): the head number is then not known in advance.
var headMoves bool

// expectHead checks eth_blockNumber: 0x0 (the genesis) unless headMoves.
func expectHead() func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		if headMoves {
			var n hexutil.Uint64
			return json.Unmarshal(got, &n)
		}
		return expectJSON(`"0x0"`)(got)
	}
}

// expectBlock checks that the result is a block object with the given number
// (any number when headMoves).
func expectBlock(n uint64) func(json.RawMessage) error {
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

var (
	resultKey = []byte(`"result"`)
	errorKey  = []byte(`"error"`)
)

// checkCalls is the cheap per-answer check used under load: the answer holds
// calls results and no error object.
func checkCalls(calls int) func([]byte) error {
	return func(body []byte) error {
		if bytes.Contains(body, errorKey) {
			return fmt.Errorf("JSON-RPC error: %.200s", body)
		}
		if n := bytes.Count(body, resultKey); n != calls {
			return fmt.Errorf("%d results in answer, want %d: %.200s", n, calls, body)
		}
		return nil
	}
}

// verify checks one full answer to the workload's first body: every call
// answered without error, and the first result as expected.
func (w workload) verify(body []byte) error {
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
