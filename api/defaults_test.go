package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// Without a block parameter (absent or null) eth_estimateGas and
// eth_createAccessList run at pending; eth_call at latest unless set to
// pending. The sender of the transfer is funded only by the pending diff, so
// every answer shows which state it ran on.
func TestExecutionDefaults(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	// 0.5 ETH with a gas limit (createAccessList's default, the gas cap,
	// would cost more than the sender has).
	transfer := `{"from":"` + pendingOnly.Hex() + `","to":"` + chain.DevAccounts()[1].Hex() + `","value":"0x6f05b59d3b20000","gas":"0x5208"}`
	for _, tc := range []struct {
		name   string
		h      rpc.Handler
		params []string
		want   string // a substring of the answer, or of the error
	}{
		{"estimateGas, no block: pending", e.api.estimateGas, []string{transfer}, `"0x5208"`},
		{"estimateGas, null block: pending", e.api.estimateGas, []string{transfer, `null`}, `"0x5208"`},
		{"estimateGas, latest named", e.api.estimateGas, []string{transfer, `"latest"`}, "insufficient funds"},
		{"createAccessList, no block: pending", e.api.createAccessList, []string{transfer}, `"gasUsed":"0x5208"`},
		{"createAccessList, latest named", e.api.createAccessList, []string{transfer, `"latest"`}, "insufficient funds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(t, tc.h, tc.params...)
			if err != nil {
				out = err.Error()
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s = %s, want %s", tc.params, out, tc.want)
			}
		})
	}

	callNumber := func() uint64 {
		t.Helper()
		var out string
		if err := json.Unmarshal([]byte(mustCall(t, e.api.ethCall, feeCall)), &out); err != nil {
			t.Fatal(err)
		}
		return probeWords(t, out)[0].Uint64()
	}
	if got, want := callNumber(), e.parent.Number.Uint64(); got != want {
		t.Errorf("eth_call without a block ran in block %d, want latest %d", got, want)
	}
	e.api.callDefault = pendingRef
	if got, want := callNumber(), e.header.Number.Uint64(); got != want {
		t.Errorf("eth_call without a block, default pending: block %d, want %d", got, want)
	}
}

func TestDefaultsToPending(t *testing.T) {
	a := mustNew(t, localChain{mustOpenDev(t)}, Config{})
	params := func(s ...string) rpc.Params {
		p := make(rpc.Params, len(s))
		for i := range s {
			p[i] = json.RawMessage(s[i])
		}
		return p
	}
	for _, tc := range []struct {
		method        string
		p             rpc.Params
		callDefault   ethjson.BlockRef
		wantAtPending bool
	}{
		{"eth_estimateGas", params(`{}`), ethjson.Latest, true},
		{"eth_estimateGas", params(`{}`, `null`), ethjson.Latest, true},
		{"eth_estimateGas", params(`{}`, `"latest"`), ethjson.Latest, false},
		{"eth_createAccessList", params(`{}`), ethjson.Latest, true},
		{"eth_call", params(`{}`), ethjson.Latest, false},
		{"eth_call", params(`{}`), pendingRef, true},
		{"eth_call", params(`{}`, `"0x1"`), pendingRef, false},
		{"eth_getBalance", params(`"0x00000000000000000000000000000000000000aa"`), pendingRef, false},
	} {
		a.callDefault = tc.callDefault
		if got := a.DefaultsToPending(tc.method, tc.p); got != tc.wantAtPending {
			t.Errorf("%s %s (eth_call default %v): %v, want %v", tc.method, tc.p, tc.callDefault.Tag, got, tc.wantAtPending)
		}
	}
}

func TestParseCallDefault(t *testing.T) {
	for s, want := range map[string]ethjson.Tag{"latest": ethjson.TagLatest, "pending": ethjson.TagPending} {
		if ref, err := ParseCallDefault(s); err != nil || ref.Tag != want {
			t.Errorf("%s: %v %v", s, ref, err)
		}
	}
	for _, s := range []string{"", "safe", "0x1", "Pending"} {
		if _, err := ParseCallDefault(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func mustOpenDev(t *testing.T) *chain.Chain {
	t.Helper()
	c, err := chain.Open(chain.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
