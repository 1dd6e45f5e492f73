package sequencer

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"
)

// TestCheatsOPStack: the dev methods on the OP-stack dev chain, whose open
// block always holds its L1-attributes deposit. Settings show in the open
// block at once and a timestamp can be chosen for it; a deposit injected
// after a cheat executes on top of it in the mined block (as on anvil
// --optimism), also after a restart; a revert brings back the deposits
// queued at the snapshot and drops those injected since.
func TestCheatsOPStack(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	h := newManualHarnessOn(t, dir, 0, nil)
	if n := len(h.seq.blk.Txs); n != 1 {
		t.Fatalf("open block holds %d transactions, want its L1-attributes deposit", n)
	}
	next := h.chain.Head().Time + 1000
	must(h.seq.SetNextBlockTimestamp(ctx, next))
	must(h.seq.SetGasLimit(ctx, 31_000_000))
	if p := h.src.Current().Header; p.Time != next || p.GasLimit != 31_000_000 {
		t.Fatalf("pending header time %d gas limit %d: settings not in the open block", p.Time, p.GasLimit)
	}
	addr := common.Address{0xd1}
	cheatNow(t, h.seq, SetBalance(addr, uint256.NewInt(100)))
	d, err := h.seq.Deposit(ctx, Deposit{From: common.Address{0xa1}, To: &addr, Mint: big.NewInt(9), Value: big.NewInt(9), Gas: 21_000})
	must(err)
	h.stop()

	// The cheat, the queued deposit and the settings survive a restart.
	h = newManualHarnessOn(t, dir, 0, nil)
	must(h.seq.Mine(ctx, MineOptions{Blocks: 1}))
	b1 := h.chain.BlockByNumber(1)
	if b1 == nil || b1.Time() != next || b1.GasLimit() != 31_000_000 || len(b1.Transactions()) != 2 || b1.Transactions()[1].Hash() != d {
		t.Fatalf("block 1 %v: want time %d, the L1-attributes deposit and deposit %s", b1, next, d)
	}
	st, err := h.chain.StateAt(b1.Header())
	must(err)
	if got := st.GetBalance(addr); got.Uint64() != 109 {
		t.Fatalf("balance %v after the cheat (100) and the deposit (9)", got)
	}

	// A deposit queued at the snapshot comes back with it; one injected
	// after is dropped with the transactions sent after.
	d2, err := h.seq.Deposit(ctx, Deposit{From: common.Address{0xa2}, To: &addr, Mint: big.NewInt(1), Gas: 21_000})
	must(err)
	id, err := h.seq.Snapshot(ctx)
	must(err)
	_, err = h.seq.Deposit(ctx, Deposit{From: common.Address{0xa3}, To: &addr, Mint: big.NewInt(2), Gas: 21_000})
	must(err)
	must(h.seq.Mine(ctx, MineOptions{Blocks: 1}))
	if ok, err := h.seq.Revert(ctx, id); err != nil || !ok {
		t.Fatalf("revert: %v %v", ok, err)
	}
	h.stop()
	h = newManualHarnessOn(t, dir, 0, nil)
	defer h.stop()
	must(h.seq.Mine(ctx, MineOptions{Blocks: 1}))
	b2 := h.chain.BlockByNumber(2)
	if b2 == nil || len(b2.Transactions()) != 2 || b2.Transactions()[1].Hash() != d2 {
		t.Fatalf("block 2 after the revert %v: want the L1-attributes deposit and deposit %s alone", b2, d2)
	}
}
