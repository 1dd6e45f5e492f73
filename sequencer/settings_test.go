package sequencer

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// TestSettingsReopenAndPersist: coinbase, gas limit, next base fee and the
// next block's time show in the pending block at once (an empty block is
// re-opened), come back after a restart, and are sealed: the base fee for
// one block only, the rest for every block.
func TestSettingsReopenAndPersist(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := newManualHarness(t, dir, testInterval)
	cb := common.Address{0xcb}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.seq.SetCoinbase(ctx, cb))
	must(h.seq.SetGasLimit(ctx, 31_000_000))
	must(h.seq.SetNextBaseFee(ctx, big.NewInt(12345)))
	next := h.chain.Head().Time + 1000
	must(h.seq.SetNextBlockTimestamp(ctx, next))
	must(h.seq.Impersonate(ctx, common.Address{0x1a}, true))
	p := h.src.Current().Header
	if p.Coinbase != cb || p.GasLimit != 31_000_000 || p.BaseFee.Int64() != 12345 || p.Time != next {
		t.Fatalf("pending header: coinbase %v gas limit %d base fee %v time %d", p.Coinbase, p.GasLimit, p.BaseFee, p.Time)
	}
	if !h.seq.Impersonating(common.Address{0x1a}) || h.seq.Impersonating(common.Address{0x1b}) {
		t.Fatal("impersonation set")
	}
	h.stop()

	h2 := newManualHarness(t, dir, testInterval)
	defer h2.stop()
	if q := h2.src.Current().Header; q.Hash() != p.Hash() {
		t.Fatalf("recovered pending header %+v, was %+v", q, p)
	}
	if !h2.seq.Impersonating(common.Address{0x1a}) {
		t.Fatal("impersonation lost in the restart")
	}
	must(h2.seq.Mine(ctx, MineOptions{Blocks: 2}))
	first := h2.chain.HeaderByNumber(1)
	second := h2.chain.HeaderByNumber(2)
	if first.Coinbase != cb || first.GasLimit != 31_000_000 || first.BaseFee.Int64() != 12345 || first.Time != next {
		t.Fatalf("block 1: coinbase %v gas limit %d base fee %v time %d", first.Coinbase, first.GasLimit, first.BaseFee, first.Time)
	}
	if second.Coinbase != cb || second.GasLimit != 31_000_000 || second.BaseFee.Int64() == 12345 || second.Time <= next {
		t.Fatalf("block 2: coinbase %v gas limit %d base fee %v time %d", second.Coinbase, second.GasLimit, second.BaseFee, second.Time)
	}
	// The clock went on from the exact time: a third block is not back at
	// the wall clock.
	must(h2.seq.Mine(ctx, MineOptions{Blocks: 1}))
	if third := h2.chain.HeaderByNumber(3); third.Time < next {
		t.Fatalf("block 3 at %d, before the time set (%d)", third.Time, next)
	}
}

// TestSetTimeRefusals: a time not after the latest block's, or for a block
// that already pre-confirmed transactions at another time, is refused.
func TestSetTimeRefusals(t *testing.T) {
	h := newManualHarness(t, "", testInterval)
	defer h.stop()
	ctx := context.Background()
	var refused *RefusedError
	if err := h.seq.SetNextBlockTimestamp(ctx, h.chain.Head().Time); err == nil || !asRefused(err, &refused) {
		t.Fatalf("the latest block's time: %v", err)
	}
	tx := h.transfer(0, common.Address{1}, 1)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
	if err := h.seq.SetNextBlockTimestamp(ctx, h.src.Current().Header.Time+100); err == nil || !asRefused(err, &refused) {
		t.Fatalf("a block with transactions: %v", err)
	}
	if h.seq.Err() != nil {
		t.Fatal(h.seq.Err())
	}
}

// TestIncreaseTime: the offset adds up and is answered; the pending block
// moves with it.
func TestIncreaseTime(t *testing.T) {
	h := newManualHarness(t, "", testInterval)
	defer h.stop()
	ctx := context.Background()
	before := h.src.Current().Header.Time
	if off, err := h.seq.IncreaseTime(ctx, 3600); err != nil || off != 3600 {
		t.Fatalf("first: %d %v", off, err)
	}
	if off, err := h.seq.IncreaseTime(ctx, 3600); err != nil || off != 7200 {
		t.Fatalf("second: %d %v", off, err)
	}
	if got := h.src.Current().Header.Time; got < before+7200 {
		t.Fatalf("pending time %d, want at least %d", got, before+7200)
	}
}
