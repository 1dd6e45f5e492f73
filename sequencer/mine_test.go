package sequencer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// TestManualMiningPreconfirms: with manual mining and flashblocks, a
// transaction is pre-confirmed within a flashblock, in a block re-opened at
// its own time, and nothing is sealed until a mine, which seals it with that
// time. The block's timestamp can then no longer be chosen.
func TestManualMiningPreconfirms(t *testing.T) {
	h := newManualHarness(t, "", testInterval)
	defer h.stop()
	ctx := context.Background()
	head := h.chain.Head()
	opened := h.src.Current().Header.Time
	time.Sleep(1100 * time.Millisecond) // the empty pending block grows a second older
	tx := h.transfer(0, common.Address{0xa1}, 7)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
	snap := h.src.Current()
	if snap.Header.Time <= opened {
		t.Errorf("pending block time %d: not re-opened after %d", snap.Header.Time, opened)
	}
	time.Sleep(5 * testInterval)
	if h.chain.Head().Hash() != head.Hash() {
		t.Fatalf("block %d sealed without a mine", h.chain.Head().Number)
	}
	ts := snap.Header.Time + 100
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 1, Timestamp: &ts}); err == nil || !strings.Contains(err.Error(), "pre-confirmed") {
		t.Errorf("timestamp for a block with pre-confirmed transactions: %v", err)
	}
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 1}); err != nil {
		t.Fatal(err)
	}
	b := h.chain.BlockByNumber(head.Number.Uint64() + 1)
	if b == nil || len(b.Transactions()) != 1 || b.Transactions()[0].Hash() != tx.Hash() || b.Time() != snap.Header.Time {
		t.Fatalf("mined block %v: want the pre-confirmed transaction at time %d", b, snap.Header.Time)
	}
	if next := h.src.Current(); next.Header.Number.Uint64() != b.NumberU64()+1 || len(next.Txs) != 0 {
		t.Errorf("pending after the mine: block %v with %d txs", next.Header.Number, len(next.Txs))
	}
}

// TestManualMiningPooled: with manual mining and no flashblocks,
// transactions wait in the pool (counted by the pool nonce) until a mine;
// anvil_mine's interval and evm_mine's timestamp set the block times.
func TestManualMiningPooled(t *testing.T) {
	h := newManualHarness(t, "", 0)
	defer h.stop()
	ctx := context.Background()
	from := crypto.PubkeyToAddress(h.keys[1].PublicKey)
	var sent []*types.Transaction
	for i := range 3 {
		sent = append(sent, h.transfer(1, common.Address{0xa2}, int64(i+1)))
	}
	snap := h.src.Current()
	if len(snap.Txs) != 0 || h.seq.pool.Len() != 3 {
		t.Fatalf("pre-confirmed %d, pooled %d: want 0 and 3", len(snap.Txs), h.seq.pool.Len())
	}
	acct, _ := snap.State.Account(from)
	if n := h.seq.pool.PendingNonce(from, acct.Nonce); n != 3 {
		t.Errorf("pool nonce %d, want 3", n)
	}
	parent := h.chain.Head().Number.Uint64()
	before := uint64(time.Now().Unix())
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 3, Interval: 10}); err != nil {
		t.Fatal(err)
	}
	b1, b2, b3 := h.chain.BlockByNumber(parent+1), h.chain.BlockByNumber(parent+2), h.chain.BlockByNumber(parent+3)
	if b1 == nil || b3 == nil || h.chain.Head().Number.Uint64() != parent+3 {
		t.Fatalf("head %d after mining 3 blocks on %d", h.chain.Head().Number, parent)
	}
	if len(b1.Transactions()) != 3 || len(b2.Transactions())+len(b3.Transactions()) != 0 {
		t.Errorf("transactions per block: %d %d %d, want 3 0 0", len(b1.Transactions()), len(b2.Transactions()), len(b3.Transactions()))
	}
	for i, tx := range sent {
		if b1.Transactions()[i].Hash() != tx.Hash() {
			t.Errorf("tx %d of the block is %v, want %v", i, b1.Transactions()[i].Hash(), tx.Hash())
		}
	}
	// As anvil: the clock moves interval seconds before each block.
	if b1.Time() < before+10 || b2.Time()-b1.Time() < 10 || b2.Time()-b1.Time() > 11 || b3.Time()-b2.Time() < 10 || b3.Time()-b2.Time() > 11 {
		t.Errorf("block times %d %d %d (mined at %d with interval 10)", b1.Time(), b2.Time(), b3.Time(), before)
	}
	ts := b3.Time() + 1000
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 2, Timestamp: &ts}); err != nil {
		t.Fatal(err)
	}
	b4, b5 := h.chain.BlockByNumber(parent+4), h.chain.BlockByNumber(parent+5)
	if b4.Time() != ts || b5.Time() < ts+1 || b5.Time() > ts+2 {
		t.Errorf("times %d %d after evm_mine at %d: the first exact, the clock going on from it", b4.Time(), b5.Time(), ts)
	}
	bad := b5.Time()
	var refused *RefusedError
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 1, Timestamp: &bad}); !errors.As(err, &refused) {
		t.Errorf("timestamp equal to the head's: %v, want a refusal", err)
	}
	if h.chain.Head().Number.Uint64() != parent+5 {
		t.Errorf("head %d after a refused mine", h.chain.Head().Number)
	}
}

// TestRecoverReopened: a manual-mining block re-opened at its first
// transaction's time comes back from the WAL with that time (the logged
// index 0 with the new environment), and is mined with it.
func TestRecoverReopened(t *testing.T) {
	dir := t.TempDir()
	h := newManualHarness(t, dir, testInterval)
	opened := h.src.Current().Header.Time
	time.Sleep(1100 * time.Millisecond)
	tx := h.transfer(0, common.Address{0xa3}, 9)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
	before := h.src.Current()
	if before.Header.Time <= opened {
		t.Fatalf("pending block time %d: not re-opened after %d", before.Header.Time, opened)
	}
	h.stop()

	h2 := newManualHarness(t, dir, testInterval)
	defer h2.stop()
	after := h2.src.Current()
	if after.Header.Time != before.Header.Time || len(after.Txs) != 1 || after.Txs[0].Hash() != tx.Hash() || after.Header.Root != before.Header.Root {
		t.Fatalf("resumed block time %d txs %d root %v; was time %d txs %d root %v", after.Header.Time, len(after.Txs), after.Header.Root, before.Header.Time, len(before.Txs), before.Header.Root)
	}
	if err := h2.seq.Mine(context.Background(), MineOptions{Blocks: 1}); err != nil {
		t.Fatal(err)
	}
	if b := h2.chain.BlockByNumber(before.Header.Number.Uint64()); b == nil || b.Time() != before.Header.Time || !h2.sealed(tx) {
		t.Fatalf("mined block %v, want the transaction at time %d", b, before.Header.Time)
	}
}

// TestSafeFinalizedLag: safe and finalized are genesis before the first
// seal, then SafeLag (2) and FinalizedLag (4) blocks behind the head; a
// head marked as both (as an import does) is never moved back by the lags.
func TestSafeFinalizedLag(t *testing.T) {
	h := newManualHarness(t, "", 0)
	defer h.stop()
	ctx := context.Background()
	want := func(step string, head, safe, finalized uint64) {
		t.Helper()
		if got := h.chain.Head().Number.Uint64(); got != head {
			t.Fatalf("%s: head %d, want %d", step, got, head)
		}
		if s, f := h.chain.Safe().Number.Uint64(), h.chain.Finalized().Number.Uint64(); s != safe || f != finalized {
			t.Errorf("%s: safe %d finalized %d, want %d and %d", step, s, f, safe, finalized)
		}
	}
	want("fresh chain", 0, 0, 0)
	mine := func(n uint64) {
		t.Helper()
		if err := h.seq.Mine(ctx, MineOptions{Blocks: n}); err != nil {
			t.Fatal(err)
		}
	}
	mine(3)
	want("3 blocks", 3, 1, 0)
	mine(3)
	want("6 blocks", 6, 4, 2)
	h.chain.SetSafe(h.chain.Head())
	h.chain.SetFinalized(h.chain.Head())
	mine(1)
	want("one block after an import-like mark", 7, 6, 6)
	mine(2)
	want("the safe lag passes the mark", 9, 7, 6)
}
