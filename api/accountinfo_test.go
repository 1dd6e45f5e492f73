package api

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/rpc"
)

// eth_getAccountInfo answers what eth_getBalance, eth_getTransactionCount
// and eth_getCode answer for the same account and block: a contract, the
// account that sent the fixture's transactions (its nonce and balance
// differ per block), a recipient and an absent account, at every kind of
// block selector.
func TestGetAccountInfo(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	b2 := f.blocks[1].Hash().Hex()
	for _, addr := range []common.Address{emitter, testAddr, testTo, {0xab, 0xcd}} {
		for _, block := range []string{`"latest"`, `"pending"`, `"earliest"`, `"0x2"`, `{"blockHash":"` + b2 + `"}`} {
			got, err := call(t, a.getAccountInfo, quoted(addr.Hex()), block)
			if err != nil {
				t.Fatalf("%s at %s: %v", addr, block, err)
			}
			var info struct{ Balance, Nonce, Code json.RawMessage }
			if err := json.Unmarshal([]byte(got), &info); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				method string
				h      rpc.Handler
				got    json.RawMessage
			}{{"eth_getBalance", a.getBalance, info.Balance}, {"eth_getTransactionCount", a.getTransactionCount, info.Nonce}, {"eth_getCode", a.getCode, info.Code}} {
				want, err := call(t, w.h, quoted(addr.Hex()), block)
				if err != nil {
					t.Fatal(err)
				}
				if string(w.got) != want {
					t.Errorf("%s at %s: eth_getAccountInfo says %s, %s answers %s", addr, block, w.got, w.method, want)
				}
			}
		}
	}
	// Distinct answers, so that the comparison above compared something.
	latest, _ := call(t, a.getAccountInfo, quoted(testAddr.Hex()), `"latest"`)
	early, _ := call(t, a.getAccountInfo, quoted(testAddr.Hex()), `"0x2"`)
	code, _ := call(t, a.getAccountInfo, quoted(emitter.Hex()), `"latest"`)
	if latest == early || code == latest || len(code) < len(`{"balance":"0x0","nonce":"0x0","code":"0x00"}`) {
		t.Errorf("answers do not differ: testAddr %s at latest, %s at 0x2; the emitter %s", latest, early, code)
	}
	for _, params := range [][]string{{}, {`"0xzz"`}, {quoted(testAddr.Hex()), `"latest"`, `"extra"`}, {quoted(testAddr.Hex()), `"0xffffff"`}} {
		if got, err := call(t, a.getAccountInfo, params...); err == nil {
			t.Errorf("params %v: answered %s, want an error", params, got)
		}
	}
}
