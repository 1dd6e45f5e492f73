package api

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// envProbe returns seven words: NUMBER, TIMESTAMP, COINBASE, BASEFEE,
// SLOAD(0), SLOAD(1), SELFBALANCE.
var (
	envProbe     = common.HexToAddress("0x00000000000000000000000000000000000e0002")
	envProbeCode = common.FromHex("0x43600052426020524160405248606052600054608052600154" + "60a0524760c05260e06000f3")
	// hashProbe returns BLOCKHASH(NUMBER-1).
	hashProbe     = common.HexToAddress("0x00000000000000000000000000000000000e0003")
	hashProbeCode = common.FromHex("0x6001430340600052" + "60206000f3")
	// pendingOnly has no balance at the head; the pending diff funds it.
	pendingOnly  = common.HexToAddress("0x00000000000000000000000000000000000e0004")
	pendCoinbase = common.HexToAddress("0x00000000000000000000000000000000c0ffee00")
	pendBaseFee  = big.NewInt(7 * params.GWei)
)

const (
	pendTimeStep = 5 // pending timestamp = parent + 5: distinct from the default 12
	pendGasLimit = 29_000_000
)

type pendingEnv struct {
	api    *API
	chain  *chain.Chain
	parent *types.Header
	header *types.Header
}

// newPendingEnv is a dev chain (head = genesis) whose probe holds slots
// 0 = 1, 1 = 2 and balance 5, with a hand-built pending snapshot on top
// that sets slot 0 = 0x10, slot 1 = 0x11, the probe's balance to 777 and
// funds pendingOnly with 1 ETH.
func newPendingEnv(t testing.TB, roots simulate.RootMode) *pendingEnv {
	t.Helper()
	return newPendingEnvWith(t, roots, nil)
}

// newPendingEnvWith is newPendingEnv with extra accounts in the genesis.
func newPendingEnvWith(t testing.TB, roots simulate.RootMode, extra types.GenesisAlloc) *pendingEnv {
	t.Helper()
	g := chain.DevGenesis()
	maps.Copy(g.Alloc, extra)
	g.Alloc[envProbe] = types.Account{Code: envProbeCode, Balance: big.NewInt(5),
		Storage: map[common.Hash]common.Hash{{}: common.BigToHash(big.NewInt(1)), common.BigToHash(common.Big1): common.BigToHash(big.NewInt(2))}}
	g.Alloc[hashProbe] = types.Account{Code: hashProbeCode, Balance: new(big.Int)}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	src := new(pending.Source)
	a := mustNew(t, localChain{c}, Config{Pending: src})
	opts := simulate.DefaultOptions()
	opts.Roots = roots
	a.setSimulateOptions(opts)

	parent := c.Head()
	header := &types.Header{
		ParentHash: parent.Hash(), Number: new(big.Int).Add(parent.Number, common.Big1), GasLimit: pendGasLimit,
		Time: parent.Time + pendTimeStep, Difficulty: new(big.Int), BaseFee: pendBaseFee, Coinbase: pendCoinbase,
		GasUsed: 21000,
	}
	base, err := c.StateReader(parent.Root)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := base.Account(envProbe)
	if err != nil || probe == nil {
		t.Fatalf("probe account: %v", err)
	}
	probe.Balance = uint256.NewInt(777)
	diff := pending.NewDiff()
	diff.Accounts[envProbe] = probe
	diff.Accounts[pendingOnly] = &types.StateAccount{Balance: uint256.NewInt(params.Ether), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash[:]}
	diff.Storage[envProbe] = map[common.Hash]common.Hash{{}: common.BigToHash(big.NewInt(0x10)), common.BigToHash(common.Big1): common.BigToHash(big.NewInt(0x11))}
	src.Publish((&pending.Snapshot{Parent: parent, Header: header, State: pending.NewState(base).With(diff), Diff: diff}).Seal())
	return &pendingEnv{api: a, chain: c, parent: parent, header: header}
}

// probeWords decodes the probe's seven words.
func probeWords(t *testing.T, hexOut string) []*big.Int {
	t.Helper()
	b, err := hexutil.Decode(hexOut)
	if err != nil || len(b) != 7*32 {
		t.Fatalf("probe output %q: %v", hexOut, err)
	}
	out := make([]*big.Int, 7)
	for i := range out {
		out[i] = new(big.Int).SetBytes(b[i*32 : (i+1)*32])
	}
	return out
}

type probeWant struct {
	number, time uint64
	coinbase     common.Address
	baseFee      *big.Int
	slot0, slot1 int64
	balance      int64
}

func (w probeWant) check(t *testing.T, what string, got []*big.Int) {
	t.Helper()
	want := []*big.Int{new(big.Int).SetUint64(w.number), new(big.Int).SetUint64(w.time), new(big.Int).SetBytes(w.coinbase[:]),
		w.baseFee, big.NewInt(w.slot0), big.NewInt(w.slot1), big.NewInt(w.balance)}
	names := []string{"NUMBER", "TIMESTAMP", "COINBASE", "BASEFEE", "SLOAD(0)", "SLOAD(1)", "SELFBALANCE"}
	for i := range want {
		if got[i].Cmp(want[i]) != 0 {
			t.Errorf("%s: %s = %v, want %v", what, names[i], got[i], want[i])
		}
	}
}

// feeCall pays a fee so that eth_call keeps the block's base fee visible
// (go-ethereum zeroes BASEFEE for calls without a gas price).
var feeCall = `{"from":"` + chain.DevAccounts()[0].Hex() + `","to":"` + envProbe.Hex() + `","maxFeePerGas":"0x2540be400"}`

func (e *pendingEnv) pendingWant() probeWant {
	return probeWant{number: e.header.Number.Uint64(), time: e.header.Time, coinbase: pendCoinbase, baseFee: pendBaseFee,
		slot0: 0x10, slot1: 0x11, balance: 777}
}

func TestCallAtPendingSeesPendingBlockAndState(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	var out string
	if err := json.Unmarshal([]byte(mustCall(t, e.api.ethCall, feeCall, `"pending"`)), &out); err != nil {
		t.Fatal(err)
	}
	e.pendingWant().check(t, "eth_call pending", probeWords(t, out))

	// latest: the sealed head's environment and state.
	if err := json.Unmarshal([]byte(mustCall(t, e.api.ethCall, feeCall, `"latest"`)), &out); err != nil {
		t.Fatal(err)
	}
	h := e.parent
	probeWant{number: h.Number.Uint64(), time: h.Time, coinbase: h.Coinbase, baseFee: h.BaseFee, slot0: 1, slot1: 2, balance: 5}.
		check(t, "eth_call latest", probeWords(t, out))
}

func TestCallOverridesAtPending(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	slot0 := `"0x0000000000000000000000000000000000000000000000000000000000000000":"0x0000000000000000000000000000000000000000000000000000000000000099"`
	for _, tc := range []struct {
		name         string
		override     string
		slot0, slot1 int64
		balance      int64
	}{
		// stateDiff on slot 0 keeps the other pre-confirmed slot.
		{"stateDiff keeps pre-confirmed slots", `{"` + envProbe.Hex() + `":{"stateDiff":{` + slot0 + `}}}`, 0x99, 0x11, 777},
		// state replaces the whole storage, pre-confirmed slots included.
		{"state replaces all slots", `{"` + envProbe.Hex() + `":{"state":{` + slot0 + `}}}`, 0x99, 0, 777},
		{"balance override", `{"` + envProbe.Hex() + `":{"balance":"0x2a"}}`, 0x10, 0x11, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out string
			if err := json.Unmarshal([]byte(mustCall(t, e.api.ethCall, feeCall, `"pending"`, tc.override)), &out); err != nil {
				t.Fatal(err)
			}
			w := e.pendingWant()
			w.slot0, w.slot1, w.balance = tc.slot0, tc.slot1, tc.balance
			w.check(t, tc.name, probeWords(t, out))
		})
	}
}

func TestEstimateAndAccessListAtPending(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	transfer := `{"from":"` + pendingOnly.Hex() + `","to":"` + chain.DevAccounts()[1].Hex() + `","value":"0x6f05b59d3b20000"}` // 0.5 ETH
	if got := mustCall(t, e.api.estimateGas, transfer, `"pending"`); got != `"0x5208"` {
		t.Errorf("estimateGas at pending = %s, want 0x5208", got)
	}
	// At latest the sender has nothing: go-ethereum's error.
	if _, err := call(t, e.api.estimateGas, transfer, `"latest"`); err == nil || !strings.Contains(err.Error(), "insufficient funds") {
		t.Errorf("estimateGas at latest: err = %v, want insufficient funds", err)
	}
	al := mustCall(t, e.api.createAccessList, `{"from":"`+chain.DevAccounts()[0].Hex()+`","to":"`+hashProbe.Hex()+`","data":"0x"}`, `"pending"`)
	if !strings.Contains(al, `"accessList":[]`) || !strings.Contains(al, `"gasUsed"`) {
		t.Errorf("createAccessList at pending = %s", al)
	}
}

type simBlockJSON struct {
	Number    hexutil.Uint64 `json:"number"`
	Timestamp hexutil.Uint64 `json:"timestamp"`
	Miner     common.Address `json:"miner"`
	BaseFee   *hexutil.Big   `json:"baseFeePerGas"`
	GasLimit  hexutil.Uint64 `json:"gasLimit"`
	GasUsed   hexutil.Uint64 `json:"gasUsed"`
	Hash      common.Hash    `json:"hash"`
	Parent    common.Hash    `json:"parentHash"`
	StateRoot common.Hash    `json:"stateRoot"`
	Calls     []struct {
		Status     hexutil.Uint64 `json:"status"`
		ReturnData hexutil.Bytes  `json:"returnData"`
		GasUsed    hexutil.Uint64 `json:"gasUsed"`
		Error      *struct {
			Code int `json:"code"`
		} `json:"error"`
	} `json:"calls"`
}

func simulateBlocks(t *testing.T, a *API, req, ref string) []simBlockJSON {
	t.Helper()
	var out []simBlockJSON
	if err := json.Unmarshal([]byte(mustCall(t, a.simulateV1, req, ref)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSimulateAtPendingIsThePendingBlock(t *testing.T) {
	for _, roots := range []simulate.RootMode{simulate.RootZero, simulate.RootCompute} {
		t.Run(roots.String(), func(t *testing.T) {
			e := newPendingEnv(t, roots)
			probe := `{"to":"` + envProbe.Hex() + `"}`
			blockhash := `{"to":"` + hashProbe.Hex() + `"}`
			req := `{"blockStateCalls":[{"calls":[` + probe + `]},{"calls":[` + probe + `,` + blockhash + `]}]}`
			blocks := simulateBlocks(t, e.api, req, `"pending"`)
			if len(blocks) != 2 {
				t.Fatalf("got %d blocks, want 2", len(blocks))
			}
			first, second := blocks[0], blocks[1]
			h := e.header
			if uint64(first.Number) != h.Number.Uint64() || uint64(first.Timestamp) != h.Time || first.Miner != pendCoinbase ||
				first.BaseFee.ToInt().Cmp(pendBaseFee) != 0 || uint64(first.GasLimit) != pendGasLimit || first.Parent != e.parent.Hash() {
				t.Errorf("first block env = %+v, want the pending block's (number %d, time %d, miner %s, base fee %v, gas limit %d)",
					first, h.Number, h.Time, pendCoinbase, pendBaseFee, pendGasLimit)
			}
			if uint64(second.Number) != h.Number.Uint64()+1 || uint64(second.Timestamp) != h.Time+pendTimeStep || second.Parent != first.Hash {
				t.Errorf("second block: number %d time %d parent %s, want %d, %d, %s", second.Number, second.Timestamp, second.Parent,
					h.Number.Uint64()+1, h.Time+pendTimeStep, first.Hash)
			}
			// Calls see the block they run in, on the pre-confirmed state.
			w := e.pendingWant()
			w.check(t, "block 1", probeWords(t, hexutil.Encode(first.Calls[0].ReturnData)))
			w.number, w.time = w.number+1, w.time+pendTimeStep
			w.baseFee = new(big.Int) // later blocks: go-ethereum's default (0 without validation)
			w.check(t, "block 2", probeWords(t, hexutil.Encode(second.Calls[0].ReturnData)))
			// BLOCKHASH of the first simulated block is its hash in the response.
			if got := common.BytesToHash(second.Calls[1].ReturnData); got != first.Hash {
				t.Errorf("BLOCKHASH(first) = %s, want %s", got, first.Hash)
			}
			zero := first.StateRoot == (common.Hash{}) && second.StateRoot == (common.Hash{})
			if (roots == simulate.RootZero) != zero {
				t.Errorf("%s mode: state roots %s, %s", roots, first.StateRoot, second.StateRoot)
			}
		})
	}
}

// The simulated pending block's gas pool is what the pre-confirmed
// transactions left: a call may not ask for more.
func TestSimulatePendingGasPool(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	left := pendGasLimit - e.header.GasUsed
	over := `{"blockStateCalls":[{"calls":[{"to":"` + envProbe.Hex() + `","gas":"` + hexutil.EncodeUint64(left+1) + `"}]}]}`
	_, err := call(t, e.api.simulateV1, over, `"pending"`)
	var coded interface{ ErrorCode() int }
	if !errors.As(err, &coded) || coded.ErrorCode() != simulate.CodeBlockGasLimit {
		t.Fatalf("err = %v, want code %d", err, simulate.CodeBlockGasLimit)
	}
	fits := `{"blockStateCalls":[{"calls":[{"to":"` + envProbe.Hex() + `","gas":"` + hexutil.EncodeUint64(left) + `"}]}]}`
	if blocks := simulateBlocks(t, e.api, fits, `"pending"`); blocks[0].Calls[0].Status != 1 {
		t.Errorf("call with the remaining gas failed: %+v", blocks[0].Calls[0])
	}
}

func TestSimulateOverridesAtPending(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	slot1 := `"0x0000000000000000000000000000000000000000000000000000000000000001":"0x0000000000000000000000000000000000000000000000000000000000000077"`
	for _, tc := range []struct {
		kind         string
		slot0, slot1 int64
	}{{"stateDiff", 0x10, 0x77}, {"state", 0, 0x77}} {
		req := `{"blockStateCalls":[{"stateOverrides":{"` + envProbe.Hex() + `":{"` + tc.kind + `":{` + slot1 + `}}},"calls":[{"to":"` + envProbe.Hex() + `"}]}]}`
		blocks := simulateBlocks(t, e.api, req, `"pending"`)
		w := e.pendingWant()
		w.slot0, w.slot1 = tc.slot0, tc.slot1
		w.check(t, tc.kind, probeWords(t, hexutil.Encode(blocks[0].Calls[0].ReturnData)))
	}
}

// Without a pending snapshot, "pending" answers as "latest".
func TestSimulatePendingWithoutSnapshot(t *testing.T) {
	g := chain.DevGenesis()
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := mustNew(t, localChain{c}, Config{Pending: new(pending.Source)})
	req := `{"blockStateCalls":[{}]}`
	p, l := mustCall(t, a.simulateV1, req, `"pending"`), mustCall(t, a.simulateV1, req, `"latest"`)
	if p != l {
		t.Errorf("pending without a snapshot differs from latest:\n%s\n%s", p, l)
	}
}

func TestCallErrors(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	code := func(err error) int {
		var coded interface{ ErrorCode() int }
		if errors.As(err, &coded) {
			return coded.ErrorCode()
		}
		return 0
	}
	for _, tc := range []struct {
		name    string
		handler rpc.Handler
		params  []string
		code    int
	}{
		{"missing call", e.api.ethCall, nil, rpc.CodeInvalidParams},
		{"too many params", e.api.ethCall, []string{`{}`, `"latest"`, `{}`, `{}`, `{}`}, rpc.CodeInvalidParams},
		{"bad block", e.api.ethCall, []string{`{}`, `"0x99"`}, rpc.CodeServer},
		{"both gasPrice and maxFee", e.api.ethCall, []string{`{"gasPrice":"0x1","maxFeePerGas":"0x1"}`}, rpc.CodeServer},
		{"wrong chain id", e.api.ethCall, []string{`{"chainId":"0x1"}`}, rpc.CodeServer},
		{"beaconRoot override", e.api.ethCall, []string{`{}`, `"latest"`, `{}`, `{"beaconRoot":"0x0000000000000000000000000000000000000000000000000000000000000001"}`}, rpc.CodeServer},
		{"state and stateDiff", e.api.ethCall, []string{`{}`, `"latest"`, `{"` + envProbe.Hex() + `":{"state":{},"stateDiff":{}}}`}, rpc.CodeServer},
		{"simulate empty", e.api.simulateV1, []string{`{"blockStateCalls":[]}`}, rpc.CodeInvalidParams},
		{"simulate too many blocks", e.api.simulateV1, []string{`{"blockStateCalls":[{"blockOverrides":{"number":"0x200"}}]}`}, simulate.CodeClientLimitExceeded},
		// pendingOnly has no funds at latest
		{"estimate fails", e.api.estimateGas, []string{`{"to":"` + envProbe.Hex() + `","data":"0x","value":"0x1","from":"` + pendingOnly.Hex() + `"}`, `"latest"`}, rpc.CodeServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, tc.handler, tc.params...)
			if got := code(err); got != tc.code {
				t.Errorf("err = %v (code %d), want code %d", err, got, tc.code)
			}
		})
	}
}

// simTransfers is the bench bundle: two chained transfers from a fresh
// account funded by a balance override.
var simTransfers = `{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0xde0b6b3a7640000"}},"calls":[` +
	`{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","value":"0x3e8"},` +
	`{"from":"0xc100000000000000000000000000000000000000","to":"0xc200000000000000000000000000000000000000","value":"0x3e8"}]}]}`

func benchmarkSimulate(b *testing.B, roots simulate.RootMode, ref string) {
	e := newPendingEnv(b, roots)
	p := rpc.Params{json.RawMessage(simTransfers), json.RawMessage(ref)}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var buf []byte // as the transport's pooled answer buffer
	for i := 0; i < b.N; i++ {
		out, err := e.api.simulateV1(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		buf = out.(rpc.Appender).AppendJSON(buf[:0])
	}
	b.ReportMetric(float64(len(buf)), "resultB")
}

func BenchmarkSimulateTransfersPendingZero(b *testing.B) {
	benchmarkSimulate(b, simulate.RootZero, `"pending"`)
}
func BenchmarkSimulateTransfersPendingCompute(b *testing.B) {
	benchmarkSimulate(b, simulate.RootCompute, `"pending"`)
}
func BenchmarkSimulateTransfersLatestZero(b *testing.B) {
	benchmarkSimulate(b, simulate.RootZero, `"latest"`)
}

// loopCode runs forever: JUMPDEST PUSH1 0 JUMP.
const loopCode = "0x5b600056"

func TestExecutionTimeout(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	e.api.setSimulateOptions(simulate.Options{GasCap: simulate.NoGasCap, Timeout: 20 * time.Millisecond})
	loop := common.HexToAddress("0x00000000000000000000000000000000000100ff")
	override := `{"` + loop.Hex() + `":{"code":"` + loopCode + `"}}`
	loopCall := `{"to":"` + loop.Hex() + `"}`
	// Without a gas cap the loop has more gas than it could burn in hours:
	// only the time limit ends it.
	for _, tc := range []struct {
		name   string
		h      rpc.Handler
		params []string
	}{
		{"eth_call", e.api.ethCall, []string{loopCall, `"latest"`, override}},
		{"eth_simulateV1", e.api.simulateV1, []string{`{"blockStateCalls":[{"blockOverrides":{"gasLimit":"0x7fffffffffffffff"},"stateOverrides":` + override + `,"calls":[` + loopCall + `]}]}`, `"latest"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, tc.h, tc.params...)
			var coded interface{ ErrorCode() int }
			if !errors.As(err, &coded) || coded.ErrorCode() != simulate.CodeTimeout {
				t.Fatalf("err = %v, want code %d", err, simulate.CodeTimeout)
			}
			if !strings.Contains(err.Error(), "execution aborted (timeout = 20ms)") {
				t.Errorf("message %q", err.Error())
			}
		})
	}
}

// A request whose context ends (the client went away) stops its running
// call even without a time limit.
func TestSimulateContextCancelled(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	e.api.setSimulateOptions(simulate.Options{GasCap: simulate.NoGasCap, Timeout: simulate.NoTimeout})
	loop := common.HexToAddress("0x00000000000000000000000000000000000100ff")
	req := `{"blockStateCalls":[{"blockOverrides":{"gasLimit":"0x7fffffffffffffff"},"stateOverrides":{"` + loop.Hex() +
		`":{"code":"` + loopCode + `"}},"calls":[{"to":"` + loop.Hex() + `"}]}]}`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := e.api.simulateV1(ctx, rpc.Params{json.RawMessage(req), json.RawMessage(`"latest"`)})
	var coded interface{ ErrorCode() int }
	if !errors.As(err, &coded) || coded.ErrorCode() != simulate.CodeTimeout {
		t.Fatalf("err = %v, want code %d", err, simulate.CodeTimeout)
	}
}

// The gas cap is a budget for the whole request: the second transfer gets
// what the first left (30000 - 21000), too little to start.
func TestSimulateGasBudget(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	e.api.setSimulateOptions(simulate.Options{GasCap: 30000, Timeout: time.Minute})
	from := chain.DevAccounts()[0].Hex()
	req := `{"blockStateCalls":[{"calls":[{"from":"` + from + `","to":"` + pendingOnly.Hex() + `"}]},{"calls":[{"from":"` + from + `","to":"` + pendingOnly.Hex() + `"}]}]}`
	_, err := call(t, e.api.simulateV1, req, `"latest"`)
	var coded interface{ ErrorCode() int }
	if !errors.As(err, &coded) || coded.ErrorCode() != simulate.CodeIntrinsicGas {
		t.Fatalf("err = %v, want code %d", err, simulate.CodeIntrinsicGas)
	}
	// One transfer fits.
	one := `{"blockStateCalls":[{"calls":[{"from":"` + from + `","to":"` + pendingOnly.Hex() + `"}]}]}`
	if blocks := simulateBlocks(t, e.api, one, `"latest"`); blocks[0].Calls[0].Status != 1 || blocks[0].Calls[0].GasUsed != 21000 {
		t.Errorf("single transfer: %+v", blocks[0].Calls[0])
	}
}

func TestSimulateCallResults(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	reverter := common.HexToAddress("0x0000000000000000000000000000000000010001")
	invalid := common.HexToAddress("0x0000000000000000000000000000000000010002")
	// reverter: REVERT(0, 4) with memory word 0 = 0xdeadbeef at the top;
	// invalid: the INVALID opcode.
	override := `{"` + reverter.Hex() + `":{"code":"0x63deadbeef60e01b60005260046000fd"},"` + invalid.Hex() + `":{"code":"0xfe"}}`
	req := `{"blockStateCalls":[{"stateOverrides":` + override + `,"calls":[{"to":"` + reverter.Hex() + `"},{"to":"` + invalid.Hex() + `","gas":"0x7530"}]}]}`
	out := mustCall(t, e.api.simulateV1, req, `"latest"`)
	var blocks []struct {
		Calls []struct {
			Status  hexutil.Uint64 `json:"status"`
			GasUsed hexutil.Uint64 `json:"gasUsed"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    string `json:"data"`
			} `json:"error"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(out), &blocks); err != nil {
		t.Fatal(err)
	}
	rev, inv := blocks[0].Calls[0], blocks[0].Calls[1]
	if rev.Status != 0 || rev.Error.Code != 3 || rev.Error.Message != "execution reverted" || rev.Error.Data != "0xdeadbeef" {
		t.Errorf("revert result: %+v", rev)
	}
	if inv.Status != 0 || inv.Error.Code != simulate.CodeVMError || inv.Error.Data != "" || inv.GasUsed != 30000 {
		t.Errorf("invalid-opcode result: %+v", inv)
	}
}

// simThreeBlocks is the second bench bundle: a transfer, a contract call and
// a transfer in three blocks.
var simThreeBlocks = `{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0xde0b6b3a7640000"}},"calls":[` +
	`{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","value":"0x3e8"}]},` +
	`{"calls":[{"from":"0xc000000000000000000000000000000000000000","to":"` + "0x00000000000000000000000000000000000e0002" + `"}]},` +
	`{"calls":[{"from":"0xc100000000000000000000000000000000000000","to":"0xc200000000000000000000000000000000000000","value":"0x1"}]}]}`

func BenchmarkSimulateThreeBlocksLatestZero(b *testing.B) {
	benchmarkThreeBlocks(b, `"latest"`)
}

func BenchmarkSimulateThreeBlocksPendingZero(b *testing.B) {
	benchmarkThreeBlocks(b, `"pending"`)
}

// BenchmarkSimulateThreeBlocksParallel runs the 3-block bundle on every P
// at once, as the node serves concurrent requests: ns/op is wall time per
// request over all of them (CPU per request is about that × GOMAXPROCS).
func BenchmarkSimulateThreeBlocksParallel(b *testing.B) {
	e := newPendingEnv(b, simulate.RootZero)
	p := rpc.Params{json.RawMessage(simThreeBlocks), json.RawMessage(`"latest"`)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var buf []byte
		for pb.Next() {
			out, err := e.api.simulateV1(context.Background(), p)
			if err != nil {
				b.Error(err)
				return
			}
			buf = out.(rpc.Appender).AppendJSON(buf[:0])
		}
	})
}

func benchmarkThreeBlocks(b *testing.B, ref string) {
	e := newPendingEnv(b, simulate.RootZero)
	p := rpc.Params{json.RawMessage(simThreeBlocks), json.RawMessage(ref)}
	ctx := context.Background()
	b.ReportAllocs()
	var buf []byte // as the transport's pooled answer buffer
	for i := 0; i < b.N; i++ {
		out, err := e.api.simulateV1(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		buf = out.(rpc.Appender).AppendJSON(buf[:0])
	}
}

// Writing the system calls' effects directly (the default) must answer as
// running the system contracts does — compared in compute mode, state roots
// and requests hashes included — also when calls enter the request queues,
// overrides rewrite them, or a precompile is moved onto one.
func TestSystemCallsDirectMatchEVM(t *testing.T) {
	from := chain.DevAccounts()[0].Hex()
	wq, cq := params.WithdrawalQueueAddress.Hex(), params.ConsolidationQueueAddress.Hex()
	// A withdrawal request: 48-byte pubkey and an 8-byte amount, paying the
	// (minimum) fee of 1 wei.
	withdrawal := `{"from":"` + from + `","to":"` + wq + `","value":"0x1","input":"0x` + strings.Repeat("ab", 48) + `0000000000000001"}`
	slot := func(i int) string { return common.BigToHash(big.NewInt(int64(i))).Hex() }
	inhibited := `"` + slot(0) + `":"0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"`
	requests := []string{
		`{"blockStateCalls":[{},{},{}]}`,
		`{"blockStateCalls":[{"calls":[` + withdrawal + `]},{},{}]}`,
		`{"blockStateCalls":[{"calls":[{"from":"` + from + `","to":"` + cq + `"}]},{}]}`,
		`{"blockStateCalls":[{"stateOverrides":{"` + wq + `":{"stateDiff":{"` + slot(0) + `":"` + slot(7) + `","` + slot(1) + `":"` + slot(3) + `"}}}},{},{}]}`,
		`{"blockStateCalls":[{"stateOverrides":{"` + cq + `":{"stateDiff":{` + inhibited + `}}}},{}]}`,
		`{"blockStateCalls":[{"stateOverrides":{"0x0000000000000000000000000000000000000001":{"movePrecompileToAddress":"` + wq + `"}}},{}]}`,
		// The precompile then runs at the queue's address instead of its code.
		`{"blockStateCalls":[{"stateOverrides":{"` + wq + `":{"stateDiff":{"` + slot(0) + `":"` + slot(7) + `"}}}},` +
			`{"stateOverrides":{"0x0000000000000000000000000000000000000001":{"movePrecompileToAddress":"` + wq + `"}}},{}]}`,
	}
	for _, ref := range []string{`"latest"`, `"pending"`} {
		for i, req := range requests {
			var answers [2]string
			for j, evm := range []bool{false, true} {
				e := newPendingEnv(t, simulate.RootCompute)
				opts := simulate.DefaultOptions()
				opts.Roots, opts.EVMSystemCalls = simulate.RootCompute, evm
				e.api.setSimulateOptions(opts)
				answers[j] = mustCall(t, e.api.simulateV1, req, ref)
			}
			if answers[0] != answers[1] {
				t.Errorf("%s request %d: direct system calls differ from the EVM's\ndirect %.400s\nevm    %.400s", ref, i, answers[0], answers[1])
			}
		}
	}
}
