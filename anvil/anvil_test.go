package anvil_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"

	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// The methods' answers are checked against anvil 1.7.1's, recorded once
// from the real anvil into testdata/anvil-1.7.1.json: the same calls in the
// same order get the same results (exactly, or the same JSON type and
// object keys where the value is the clock's or the chain's own), and the
// same error codes (anvil's messages are its JSON decoder's; ours say the
// same in our words). Record again with
//
//	PRECONF_RECORD_ANVIL=/path/to/anvil go test -run TestAnvilAnswers ./anvil/
//
// (go run ./bench -install anvil prints the path).

const (
	x   = "0x00000000000000000000000000000000000000a1"
	y   = "0x00000000000000000000000000000000000000a2"
	z   = "0x00000000000000000000000000000000000000a3"
	tok = "0x00000000000000000000000000000000000000a4"
)

// call is one request of the table; shape compares only the result's JSON
// type and keys.
type call struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Shape  bool            `json:"shape,omitempty"`
}

func c(method, params string) call { return call{Method: method, Params: json.RawMessage(params)} }
func shape(method, params string) call {
	return call{Method: method, Params: json.RawMessage(params), Shape: true}
}
func q(format string, a ...any) string { return fmt.Sprintf(format, a...) }

var slot1 = "0x0000000000000000000000000000000000000000000000000000000000000002"

var calls = []call{
	// state
	c("anvil_setBalance", q(`["%s","0x10"]`, x)),
	c("anvil_setBalance", q(`["%s","16"]`, x)),
	c("anvil_setBalance", q(`["%s",16]`, x)),
	c("anvil_setBalance", q(`["%s"]`, x)),
	c("anvil_setBalance", `["0x12","0x1"]`),
	c("anvil_setBalance", q(`["%s","0x1","0x2"]`, x)),
	c("anvil_addBalance", q(`["%s","0x10"]`, x)),
	c("eth_getBalance", q(`["%s","pending"]`, x)),
	c("hardhat_setBalance", q(`["%s","0xde0b6b3a7640000"]`, y)),
	c("hardhat_addBalance", q(`["%s","1"]`, y)),
	c("eth_getBalance", q(`["%s","pending"]`, y)),
	c("anvil_setCode", q(`["%s","0x6001"]`, x)),
	c("anvil_setCode", q(`["%s","6002"]`, x)),
	c("anvil_setCode", q(`["%s","0x6"]`, x)),
	c("eth_getCode", q(`["%s","pending"]`, x)),
	c("hardhat_setCode", q(`["%s","0x"]`, z)),
	c("eth_getCode", q(`["%s","pending"]`, z)),
	c("anvil_setNonce", q(`["%s","0x5"]`, x)),
	c("eth_getTransactionCount", q(`["%s","pending"]`, x)),
	c("hardhat_setNonce", q(`["%s",7]`, x)),
	c("evm_setAccountNonce", q(`["%s","0x9"]`, y)),
	c("eth_getTransactionCount", q(`["%s","pending"]`, x)),
	c("eth_getTransactionCount", q(`["%s","pending"]`, y)),
	c("anvil_setStorageAt", q(`["%s","0x1","%s"]`, x, slot1)),
	c("anvil_setStorageAt", q(`["%s","0x1","0x02"]`, x)),
	c("hardhat_setStorageAt", q(`["%s","0x0002","%s"]`, x, slot1)),
	c("eth_getStorageAt", q(`["%s","0x1","pending"]`, x)),
	c("eth_getStorageAt", q(`["%s","0x2","pending"]`, x)),
	c("anvil_setStorageAt", q(`["%s","0x1","%s"]`, z, slot1)), // an empty account keeps it
	c("eth_getStorageAt", q(`["%s","0x1","pending"]`, z)),
	// dealERC20: a token whose balanceOf reads keccak(owner, 3)
	c("anvil_setCode", q(`["%s","0x600435600052600360205260406000205460005260206000f3"]`, tok)),
	c("anvil_dealERC20", q(`["%s","%s","0x2a"]`, y, tok)),
	c("eth_call", q(`[{"to":"%s","data":"0x70a08231000000000000000000000000%s"},"pending"]`, tok, y[2:])),
	c("hardhat_dealERC20", q(`["%s","%s","1000000"]`, y, tok)),
	c("eth_call", q(`[{"to":"%s","data":"0x70a08231000000000000000000000000%s"},"pending"]`, tok, y[2:])),
	c("anvil_dealERC20", q(`["%s","%s","0x2a"]`, y, x)),
	c("anvil_dealERC20", q(`["%s","%s"]`, y, tok)),
	c("anvil_setCoinbase", q(`["%s"]`, x)),
	c("anvil_setCoinbase", `["0x1"]`),
	c("hardhat_setCoinbase", q(`["%s"]`, y)),
	c("anvil_setNextBlockBaseFeePerGas", `["0x3b9aca00"]`),
	c("hardhat_setNextBlockBaseFeePerGas", `[1000000000]`),
	c("anvil_setNextBlockBaseFeePerGas", `[]`),
	c("anvil_setBlockGasLimit", `["0x1c9c380"]`),
	c("evm_setBlockGasLimit", `[30000000]`),
	c("anvil_setBlockGasLimit", `[]`),
	// accounts
	c("anvil_impersonateAccount", q(`["%s"]`, x)),
	c("hardhat_impersonateAccount", q(`["%s"]`, y)),
	c("anvil_stopImpersonatingAccount", q(`["%s"]`, x)),
	c("hardhat_stopImpersonatingAccount", q(`["%s"]`, z)),
	c("anvil_impersonateAccount", `["0x1"]`),
	c("anvil_impersonateAccount", `[]`),
	c("anvil_autoImpersonateAccount", `[true]`),
	c("hardhat_autoImpersonateAccount", `[false]`),
	c("anvil_autoImpersonateAccount", `["yes"]`),
	// time
	c("evm_increaseTime", `["0x10"]`),
	c("evm_increaseTime", `[16]`),
	c("anvil_increaseTime", `[1]`),
	c("evm_increaseTime", `[-16]`),
	c("evm_increaseTime", `[]`),
	c("evm_mine", `[]`), // a block at the clock's time: 1 is before it
	c("evm_setNextBlockTimestamp", `["0x1"]`),
	c("evm_setNextBlockTimestamp", `[]`),
	shape("anvil_setTime", `["0x7fffffff"]`),
	c("evm_setNextBlockTimestamp", `["0x80000000"]`),
	c("anvil_setNextBlockTimestamp", `[2147483649]`),
	c("anvil_setBlockTimestampInterval", `[5]`),
	c("anvil_removeBlockTimestampInterval", `[]`),
	c("anvil_removeBlockTimestampInterval", `[]`),
	// snapshots
	c("evm_snapshot", `[]`),
	c("anvil_setBalance", q(`["%s","0x5"]`, z)),
	c("evm_snapshot", `[]`),
	c("anvil_setBalance", q(`["%s","0x6"]`, z)),
	c("eth_getBalance", q(`["%s","pending"]`, z)),
	c("evm_revert", `["0x1"]`),
	c("eth_getBalance", q(`["%s","pending"]`, z)),
	c("evm_revert", `["0x1"]`),
	c("evm_revert", `["0x9"]`),
	c("evm_revert", `[1]`),
	c("evm_revert", `[]`),
	c("anvil_snapshot", `[]`),
	c("anvil_revert", `["0x0"]`),
	c("eth_getBalance", q(`["%s","pending"]`, z)),
	c("anvil_revert", `["0x2"]`),
	// pool and info
	c("anvil_dropTransaction", `["0x0000000000000000000000000000000000000000000000000000000000000001"]`),
	c("anvil_dropTransaction", `["0x1"]`),
	c("hardhat_dropTransaction", `[]`),
	c("anvil_dropAllTransactions", `[]`),
	c("hardhat_dropAllTransactions", `[]`),
	shape("anvil_nodeInfo", `[]`),
	shape("anvil_metadata", `[]`),
	shape("hardhat_metadata", `[]`),
	// reset
	c("anvil_reset", `[{}]`),
	c("anvil_reset", `[]`),
	c("eth_blockNumber", `[]`),
	c("eth_getBalance", q(`["%s","pending"]`, x)),
	c("hardhat_reset", `[]`),
	// mining on demand
	c("anvil_mine", `[]`),
	c("anvil_mine", `["0x2","0x10"]`),
	c("hardhat_mine", `[2]`),
	c("anvil_mine", `[{"blocks":2}]`),
	c("evm_mine", `[{"timestamp":null,"blocks":2}]`),
	c("evm_mine", `["0x2","0x10"]`),
	c("eth_blockNumber", `[]`),
	// mining modes (anvil starts with automine, this node with manual mining)
	c("evm_setAutomine", `[false]`),
	c("anvil_getAutomine", `[]`),
	c("anvil_getIntervalMining", `[]`),
	c("evm_setAutomine", `[true]`),
	c("hardhat_getAutomine", `[]`),
	c("anvil_getIntervalMining", `[]`),
	c("evm_setAutomine", `[]`),
	c("evm_setAutomine", `["true"]`),
	c("anvil_setIntervalMining", `[0]`),
	c("anvil_getAutomine", `[]`),
	c("anvil_getIntervalMining", `[]`),
	c("anvil_setIntervalMining", `[]`),
}

// answer is a recorded exchange.
type answer struct {
	call
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

const recording = "testdata/anvil-1.7.1.json"

func post(t *testing.T, url string, cl call) answer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": cl.Method, "params": cl.Params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", cl.Method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("%s: %v: %s", cl.Method, err, raw)
	}
	a.call = cl
	return a
}

func TestAnvilAnswers(t *testing.T) {
	if bin := os.Getenv("PRECONF_RECORD_ANVIL"); bin != "" {
		record(t, bin)
	}
	raw, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	var want []answer
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(calls) {
		t.Fatalf("%s has %d answers for %d calls: record it again", recording, len(want), len(calls))
	}
	// The OP-stack dev chain differs only where its genesis does
	// (opGenesisBalance).
	for _, kind := range devChains {
		t.Run(kind.name, func(t *testing.T) {
			g, err := kind.genesis()
			if err != nil {
				t.Fatal(err)
			}
			checkAnswers(t, g, want)
		})
	}
}

// checkAnswers runs the table on a node with genesis g against anvil's
// recorded answers.
func checkAnswers(t *testing.T, g *core.Genesis, want []answer) {
	n, err := node.New(node.Config{DataDir: t.TempDir(), Genesis: g, Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if w.Method != calls[i].Method || !bytes.Equal(compact(t, w.Params), compact(t, calls[i].Params)) {
			t.Fatalf("answer %d is for %s %s, the table calls %s %s: record it again", i, w.Method, w.Params, calls[i].Method, calls[i].Params)
		}
		got := post(t, n.URL(), calls[i])
		name := fmt.Sprintf("#%d %s %s", i, w.Method, w.Params)
		switch {
		case w.Error != nil:
			if got.Error == nil || got.Error.Code != w.Error.Code {
				t.Errorf("%s: got %s %+v, anvil answered error %d %q", name, got.Result, got.Error, w.Error.Code, w.Error.Message)
			}
		case got.Error != nil:
			t.Errorf("%s: error %d %q, anvil answered %s", name, got.Error.Code, got.Error.Message, w.Result)
		case w.Shape:
			if g, a := jsonShape(t, got.Result), jsonShape(t, w.Result); g != a {
				t.Errorf("%s: result %s shaped %s, anvil's %s shaped %s", name, got.Result, g, w.Result, a)
			}
		case bytes.Equal(compact(t, got.Result), compact(t, w.Result)):
		case opGenesisBalance(t, g, w, got.Result):
			t.Logf("%s: result %s, anvil answered %s: the OP-stack genesis's balance of the address added", name, got.Result, w.Result)
		default:
			t.Errorf("%s: result %s, anvil answered %s", name, got.Result, w.Result)
		}
	}
}

// opGenesisBalance reports whether got is anvil's eth_getBalance answer w
// plus the address's balance in the OP-stack genesis g: such a genesis
// funds the precompile addresses 0x00…0xff with 1 wei each (the table's
// addresses are among them), anvil's chain does not. Only an account back
// at its genesis state answers so (after evm_revert to snapshot 0 or
// anvil_reset), which the table's order makes those calls.
func opGenesisBalance(t *testing.T, g *core.Genesis, w answer, got json.RawMessage) bool {
	if g.Config.Optimism == nil || w.Method != "eth_getBalance" {
		return false
	}
	var params []string
	var a, b hexutil.Big
	if json.Unmarshal(w.Params, &params) != nil || len(params) == 0 || json.Unmarshal(w.Result, &a) != nil || json.Unmarshal(got, &b) != nil {
		return false
	}
	acct, ok := g.Alloc[common.HexToAddress(params[0])]
	if !ok || acct.Balance == nil || acct.Balance.Sign() == 0 {
		return false
	}
	return new(big.Int).Add(a.ToInt(), acct.Balance).Cmp(b.ToInt()) == 0
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	var b bytes.Buffer
	if len(raw) == 0 {
		return []byte("null")
	}
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// jsonShape is raw's JSON type, with an object's keys (and their values'
// shapes) in order.
func jsonShape(t *testing.T, raw json.RawMessage) string {
	var v any
	if len(raw) == 0 {
		return "null"
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return shapeOf(v)
}

func shapeOf(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + shapeOf(v[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case string:
		if strings.HasPrefix(v, "0x") {
			return "hex"
		}
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// record runs the table against the anvil at bin and writes the answers.
func record(t *testing.T, bin string) {
	url := startAnvil(t, bin)
	out := make([]answer, len(calls))
	for i, cl := range calls {
		out[i] = post(t, url, cl)
	}
	enc, _ := json.MarshalIndent(out, "", "  ")
	if err := os.WriteFile(filepath.FromSlash(recording), append(enc, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMiningModes: automine seals a block per sent transaction (its
// receipt is at latest when the send returns), interval mining seals on
// its own, and turning both off leaves blocks to evm_mine.
func TestMiningModes(t *testing.T) {
	n, err := node.New(node.Config{DataDir: t.TempDir(), Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: 100 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	url := n.URL()
	must := func(method, params string) json.RawMessage {
		t.Helper()
		a := post(t, url, c(method, params))
		if a.Error != nil {
			t.Fatalf("%s %s: %d %s", method, params, a.Error.Code, a.Error.Message)
		}
		return a.Result
	}
	head := func() uint64 {
		var h hexutil.Uint64
		json.Unmarshal(must("eth_blockNumber", `[]`), &h)
		return uint64(h)
	}
	accounts := must("eth_accounts", `[]`)
	var from []string
	json.Unmarshal(accounts, &from)
	must("evm_setAutomine", `[true]`)
	for i, want := range []uint64{1, 2} {
		var hash string
		json.Unmarshal(must("eth_sendTransaction", q(`[{"from":"%s","to":"%s","value":"0x1"}]`, from[0], x)), &hash)
		if got := head(); got != want {
			t.Fatalf("send %d under automine: head %d, want %d", i, got, want)
		}
		var r struct{ BlockNumber hexutil.Uint64 }
		json.Unmarshal(must("eth_getTransactionReceipt", q(`["%s"]`, hash)), &r)
		if uint64(r.BlockNumber) != want {
			t.Fatalf("receipt in block %d, want %d", r.BlockNumber, want)
		}
	}
	// A nonce gap is not ready: nothing is sealed for it.
	must("eth_sendTransaction", q(`[{"from":"%s","to":"%s","value":"0x1","nonce":"0x9"}]`, from[0], x))
	if got := head(); got != 2 {
		t.Fatalf("automine sealed for a queued transaction: head %d", got)
	}
	must("anvil_dropAllTransactions", `[]`)
	// A deposit (the default chain is the OP-stack one) is mined at once
	// too, as anvil --optimism's.
	var dep string
	json.Unmarshal(must("eth_sendTransaction", q(`[{"from":"%s","to":"%s","value":"0x5","mint":"0x5","gas":"0x5208"}]`, y, x)), &dep)
	if got := head(); got != 3 {
		t.Fatalf("deposit under automine: head %d, want 3", got)
	}
	var r struct{ BlockNumber hexutil.Uint64 }
	if json.Unmarshal(must("eth_getTransactionReceipt", q(`["%s"]`, dep)), &r); r.BlockNumber != 3 {
		t.Fatalf("deposit's receipt in block %d, want 3", r.BlockNumber)
	}
	must("evm_setAutomine", `[false]`)
	must("eth_sendTransaction", q(`[{"from":"%s","to":"%s","value":"0x1"}]`, from[0], x))
	if got := head(); got != 3 {
		t.Fatalf("automine off: head %d after a send", got)
	}
	must("anvil_setIntervalMining", `[1]`)
	if got := string(must("anvil_getIntervalMining", `[]`)); got != "1" {
		t.Fatalf("interval %s", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for head() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("interval mining: head %d after 10 s", head())
		}
		time.Sleep(100 * time.Millisecond)
	}
	must("anvil_setIntervalMining", `[0]`)
	stopped := head()
	time.Sleep(1500 * time.Millisecond)
	if got := head(); got != stopped {
		t.Fatalf("interval mining off: head went from %d to %d", stopped, got)
	}
}

// TestNoSequencer: without a sequencer the methods answer why.
func TestNoSequencer(t *testing.T) {
	n, err := node.New(node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	a := post(t, n.URL(), c("anvil_setBalance", q(`["%s","0x1"]`, x)))
	if a.Error == nil || a.Error.Code != -32000 || !strings.Contains(a.Error.Message, "does not sequence") {
		t.Fatalf("anvil_setBalance without a sequencer: %+v", a.Error)
	}
}
