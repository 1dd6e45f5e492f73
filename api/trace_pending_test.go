package api

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/simulate"
)

// TestTraceCallAtPending checks that debug_traceCall at "pending" runs in
// the pending block's environment over the pre-confirmed state: the probe's
// return value under the struct logger is the pending block's number,
// timestamp, fee recipient and base fee and the pre-confirmed slots and
// balance (as eth_call sees them), and a state override still applies.
func TestTraceCallAtPending(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	var res struct {
		Failed      bool          `json:"failed"`
		ReturnValue hexutil.Bytes `json:"returnValue"`
	}
	trace := func(ref, cfg string) {
		t.Helper()
		res.ReturnValue = nil
		if err := json.Unmarshal([]byte(mustCall(t, e.api.debugTraceCall, feeCall, ref, cfg)), &res); err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			t.Fatalf("trace at %s failed", ref)
		}
	}
	trace(`"pending"`, `{}`)
	e.pendingWant().check(t, "traceCall pending", probeWords(t, res.ReturnValue.String()))

	trace(`"latest"`, `{"disableStack":true}`)
	h := e.parent
	probeWant{number: h.Number.Uint64(), time: h.Time, coinbase: h.Coinbase, baseFee: h.BaseFee, slot0: 1, slot1: 2, balance: 5}.
		check(t, "traceCall latest", probeWords(t, res.ReturnValue.String()))

	trace(`"pending"`, `{"stateOverrides":{"`+envProbe.Hex()+`":{"stateDiff":{"0x0000000000000000000000000000000000000000000000000000000000000001":"0x0000000000000000000000000000000000000000000000000000000000000042"}}}}`)
	want := e.pendingWant()
	want.slot1 = 0x42
	want.check(t, "traceCall pending with a state override", probeWords(t, res.ReturnValue.String()))
}
