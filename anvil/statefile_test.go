package anvil_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// testdata/anvil-dump-state.json was written by anvil 1.7.1 --dump-state
// after: anvil_setBalance 0xd1 0x1234, anvil_setNonce 0xd1 7, anvil_setCode
// 0xd2 0x602a60005260206000f3, anvil_setStorageAt 0xd2 slot 5 = 0xff, and
// eth_sendTransaction of 1000 wei from dev account 0 to 0xd3 (mined).

type dumpedAccount struct {
	Nonce   uint64                      `json:"nonce"`
	Balance *hexutil.Big                `json:"balance"`
	Code    hexutil.Bytes               `json:"code"`
	Storage map[common.Hash]common.Hash `json:"storage"`
}

type dumped struct {
	Accounts map[common.Address]dumpedAccount `json:"accounts"`
}

func newDevNode(t *testing.T) *node.Node {
	t.Helper()
	n, err := node.New(node.Config{DataDir: t.TempDir(), Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	return n
}

func rpcResult(t *testing.T, url, method, params string) json.RawMessage {
	t.Helper()
	a := post(t, url, c(method, params))
	if a.Error != nil {
		t.Fatalf("%s %s: %d %s", method, params, a.Error.Code, a.Error.Message)
	}
	return a.Result
}

// checkAccounts reads every account of want back at pending.
func checkAccounts(t *testing.T, url string, want map[common.Address]dumpedAccount) {
	t.Helper()
	for addr, a := range want {
		var bal hexutil.Big
		json.Unmarshal(rpcResult(t, url, "eth_getBalance", q(`["%s","pending"]`, addr)), &bal)
		var nonce hexutil.Uint64
		json.Unmarshal(rpcResult(t, url, "eth_getTransactionCount", q(`["%s","pending"]`, addr)), &nonce)
		var code hexutil.Bytes
		json.Unmarshal(rpcResult(t, url, "eth_getCode", q(`["%s","pending"]`, addr)), &code)
		if bal.ToInt().Cmp(a.Balance.ToInt()) != 0 || uint64(nonce) != a.Nonce || !bytes.Equal(code, a.Code) {
			t.Fatalf("%v: balance %v nonce %d code %x, want %v %d %x", addr, &bal, nonce, code, a.Balance, a.Nonce, a.Code)
		}
		for k, v := range a.Storage {
			var got common.Hash
			json.Unmarshal(rpcResult(t, url, "eth_getStorageAt", q(`["%s","%s","pending"]`, addr, k)), &got)
			if got != v {
				t.Fatalf("%v slot %v: %v, want %v", addr, k, got, v)
			}
		}
	}
}

// dumpOf asks url for anvil_dumpState and decodes it.
func dumpOf(t *testing.T, url string) (dumped, []byte) {
	t.Helper()
	var gz hexutil.Bytes
	if err := json.Unmarshal(rpcResult(t, url, "anvil_dumpState", `[]`), &gz); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var d dumped
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d, gz
}

// TestStateFiles: a state anvil dumped loads here (every account reads
// back at pending); our dump lists those accounts with the same values,
// before and after they are sealed; and our dump (with the OP-stack
// chain's predeploys) loads into a fresh node to the same state.
func TestStateFiles(t *testing.T) {
	raw, err := os.ReadFile("testdata/anvil-dump-state.json")
	if err != nil {
		t.Fatal(err)
	}
	var fromAnvil dumped
	if err := json.Unmarshal(raw, &fromAnvil); err != nil {
		t.Fatal(err)
	}
	if a := fromAnvil.Accounts[common.HexToAddress("0xd2")]; len(a.Code) == 0 || len(a.Storage) != 1 {
		t.Fatalf("fixture without the contract: %+v", a)
	}
	n := newDevNode(t)
	url := n.URL()
	if got := string(rpcResult(t, url, "anvil_loadState", q(`["%s"]`, hexutil.Encode(raw)))); got != "true" {
		t.Fatalf("anvil_loadState answered %s", got)
	}
	checkAccounts(t, url, fromAnvil.Accounts)
	for _, step := range []string{"pending", "sealed"} {
		if step == "sealed" {
			rpcResult(t, url, "evm_mine", `[]`)
		}
		d, _ := dumpOf(t, url)
		for addr, want := range fromAnvil.Accounts {
			got, ok := d.Accounts[addr]
			if !ok {
				t.Fatalf("%s dump: %v missing", step, addr)
			}
			// Sealing a block writes the system contracts' ring buffers
			// (EIP-4788, EIP-2935): new slots there, the loaded ones kept.
			grew := step == "sealed" && len(got.Storage) > len(want.Storage)
			if got.Nonce != want.Nonce || got.Balance.ToInt().Cmp(want.Balance.ToInt()) != 0 || !bytes.Equal(got.Code, want.Code) || len(got.Storage) != len(want.Storage) && !grew {
				t.Fatalf("%s dump of %v: %+v, want %+v", step, addr, got, want)
			}
			for k, v := range want.Storage {
				if got.Storage[k] != v {
					t.Fatalf("%s dump of %v slot %v: %v, want %v", step, addr, k, got.Storage[k], v)
				}
			}
		}
	}
	ours, gz := dumpOf(t, url)
	// The default chain is the OP-stack one: the dump holds its predeploys,
	// such as the L1Block proxy the L1-attributes deposits write.
	if a, ok := ours.Accounts[common.HexToAddress("0x4200000000000000000000000000000000000015")]; !ok || len(a.Code) == 0 || len(a.Storage) == 0 {
		t.Fatalf("dump without the L1Block predeploy: %+v", a)
	}
	n2 := newDevNode(t)
	if got := string(rpcResult(t, n2.URL(), "anvil_loadState", q(`["%s"]`, hexutil.Encode(gz)))); got != "true" {
		t.Fatalf("loading our gzip dump answered %s", got)
	}
	checkAccounts(t, n2.URL(), ours.Accounts)
	if a := post(t, url, c("anvil_loadState", `["0x7b"]`)); a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("a broken state file: %+v", a)
	}
}
