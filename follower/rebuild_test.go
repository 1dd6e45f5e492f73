package follower_test

import (
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/pending"
)

// TestFollowerTakesRebuiltBlock: a dev method that changes the open block's
// environment before its first transaction (the clock, the coinbase, the gas
// limit, the base fee) rebuilds the block under a new payload id, published
// again from index 0, as a builder's fail-over does. A follower takes each
// rebuild as the block starting over: its pending block gets the new
// environment (the checker compares every snapshot's header hash with the
// sequencer's), and the transactions pre-confirmed after the rebuilds match.
func TestFollowerTakesRebuiltBlock(t *testing.T) {
	n, feedURL := sequencerNode(t, 30*time.Second, 100*time.Millisecond) // one block for the whole test
	seq := record(t, n.Pending)
	_, src := startFollower(t, n, n.URL(), feedURL+"?replay=block")
	c := check(t, "follower", src, seq)
	caughtUp := func(what string) *pending.Snapshot {
		t.Helper()
		var want *pending.Snapshot
		waitFor(t, "the follower to show "+what, 20*time.Second, func() bool {
			want = n.Pending.Current()
			got := src.Current()
			return got != nil && got.PayloadID == want.PayloadID && got.Index == want.Index
		})
		return want
	}
	before := caughtUp("the open block")
	coinbase := common.Address{0xc1}
	steps := []struct {
		method string
		params []any
		check  func(h *pending.Snapshot) bool
	}{
		{"evm_increaseTime", []any{3600}, func(s *pending.Snapshot) bool { return s.Header.Time >= before.Header.Time+3600 }},
		{"anvil_setCoinbase", []any{coinbase}, func(s *pending.Snapshot) bool { return s.Header.Coinbase == coinbase }},
		{"anvil_setBlockGasLimit", []any{"0x1c9c381"}, func(s *pending.Snapshot) bool { return s.Header.GasLimit == 0x1c9c381 }},
		{"anvil_setNextBlockBaseFeePerGas", []any{"0x3b9aca07"}, func(s *pending.Snapshot) bool { return s.Header.BaseFee.Uint64() == 0x3b9aca07 }},
		{"evm_setNextBlockTimestamp", []any{before.Header.Time + 7200}, func(s *pending.Snapshot) bool { return s.Header.Time == before.Header.Time+7200 }},
	}
	prev := before
	for _, st := range steps {
		if err := rpcCall(n.URL(), nil, st.method, st.params...); err != nil {
			t.Fatalf("%s: %v", st.method, err)
		}
		snap := caughtUp("the block rebuilt by " + st.method)
		if snap.Header.Number.Cmp(before.Header.Number) != 0 || snap.PayloadID == prev.PayloadID || !st.check(snap) {
			t.Fatalf("%s: pending block %d payload %x (was %x), header %+v", st.method, snap.Header.Number, snap.PayloadID, prev.PayloadID, snap.Header)
		}
		prev = snap
	}
	s := newSender(t, n.URL(), n.Chain.Config().ChainID, 1)
	if err := s.send(0, true, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to match a pre-confirmed transaction", 20*time.Second, func() bool { return c.withTxs.Load() > 0 })
	noErrors(t, c)
	if got := src.Current(); got.PayloadID != prev.PayloadID || got.Header.Time != prev.Header.Time || got.Header.Coinbase != coinbase {
		t.Fatalf("the follower's pending block left the rebuilt payload: %x at %d", got.PayloadID, got.Header.Time)
	}
}
