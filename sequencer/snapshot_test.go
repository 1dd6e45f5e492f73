package sequencer

import (
	"context"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"
)

// TestSnapshotRevert: a revert brings back the sealed head, the pending
// block (its cheats and pre-confirmed transactions, same root) and the
// pool as they were at the snapshot, drops later snapshots, and survives
// a restart; ids are not reused.
func TestSnapshotRevert(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := newManualHarness(t, dir, testInterval)
	cheatNow(t, h.seq, SetBalance(common.Address{0xa1}, uint256.NewInt(1)))
	pre := h.transfer(0, common.Address{0xa2}, 1)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(pre) })
	h.nonce[addressOf(h.keys[1])] = 5
	gapped := h.transfer(1, common.Address{0xa2}, 1) // pooled: nonce 5 waits for 0…4
	head, pending := h.chain.Head(), h.src.Current()
	poolBefore := h.seq.pool.Len()
	id0, err := h.seq.Snapshot(ctx)
	if err != nil || id0 != 0 {
		t.Fatalf("snapshot: %d %v", id0, err)
	}
	// Change everything: a cheat, a transaction, two blocks, a second snapshot.
	cheatNow(t, h.seq, SetBalance(common.Address{0xa1}, uint256.NewInt(2)))
	later := h.transfer(2, common.Address{0xa3}, 1)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(later) })
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 2}); err != nil {
		t.Fatal(err)
	}
	id1, _ := h.seq.Snapshot(ctx)
	if id1 != 1 || len(h.seq.Snapshots()) != 2 {
		t.Fatalf("second snapshot %d, live %v", id1, h.seq.Snapshots())
	}
	check := func(h *harness, step string) {
		t.Helper()
		if got := h.chain.Head(); got.Hash() != head.Hash() {
			t.Fatalf("%s: head %d, want %d", step, got.Number, head.Number)
		}
		p := h.src.Current()
		if p.Header.Root != pending.Header.Root || len(p.Txs) != len(pending.Txs) || !h.preconfirmed(pre) || h.preconfirmed(later) {
			t.Fatalf("%s: pending root %v txs %d, want %v %d", step, p.Header.Root, len(p.Txs), pending.Header.Root, len(pending.Txs))
		}
		if h.sealed(pre) || h.sealed(later) {
			t.Fatalf("%s: a transaction of the reverted blocks is still sealed", step)
		}
		if b := balance(t, p.State, common.Address{0xa1}); b.Uint64() != 1 {
			t.Fatalf("%s: cheated balance %v, want 1", step, b)
		}
		if h.seq.pool.Len() != poolBefore || !h.seq.pool.Has(gapped.Hash()) || h.seq.pool.Has(later.Hash()) {
			t.Fatalf("%s: pool holds %d (later tx: %v), want %d", step, h.seq.pool.Len(), h.seq.pool.Has(later.Hash()), poolBefore)
		}
	}
	ok, err := h.seq.Revert(ctx, id0)
	if err != nil || !ok {
		t.Fatalf("revert: %v %v", ok, err)
	}
	check(h, "reverted")
	if ok, _ := h.seq.Revert(ctx, id1); ok {
		t.Fatal("the later snapshot survived the revert")
	}
	if len(h.seq.Snapshots()) != 0 {
		t.Fatalf("live snapshots %v", h.seq.Snapshots())
	}
	h.stop()

	h2 := newManualHarness(t, dir, testInterval)
	defer h2.stop()
	check(h2, "restarted")
	if id, _ := h2.seq.Snapshot(ctx); id != 2 {
		t.Fatalf("snapshot id %d after the restart, want 2", id)
	}
	// The chain goes on from the reverted head.
	if err := h2.seq.Mine(ctx, MineOptions{Blocks: 1}); err != nil {
		t.Fatal(err)
	}
	if !h2.sealed(pre) {
		t.Fatal("the pre-confirmed transaction was not sealed after the revert")
	}
}

// TestSnapshotSurvivesRestart: a live snapshot taken before a restart can
// be reverted to after it.
func TestSnapshotSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := newHarness(t, dir, testBlockTime)
	cheatNow(t, h.seq, SetNonce(common.Address{0xb1}, 3))
	id, _ := h.seq.Snapshot(ctx)
	root := h.src.Current().Header.Root
	number := h.chain.Head().Number.Uint64()
	h.waitFor("two more blocks", func() bool { return h.chain.Head().Number.Uint64() >= number+2 })
	h.stop()
	h2 := newHarness(t, dir, testBlockTime)
	defer h2.stop()
	ok, err := h2.seq.Revert(ctx, id)
	if err != nil || !ok {
		t.Fatalf("revert after restart: %v %v", ok, err)
	}
	if h2.chain.Head().Number.Uint64() != number {
		t.Fatalf("head %d, want %d", h2.chain.Head().Number, number)
	}
	// The timed sequencer may have added a flashblock since; the first
	// published after the revert has the snapshot's state.
	if p := h2.src.Current(); p.Header.Number.Uint64() == number+1 && p.Index == 0 && p.Header.Root != root {
		t.Fatalf("pending root %v, want %v", p.Header.Root, root)
	}
	acct, _ := h2.src.Current().State.Account(common.Address{0xb1})
	if acct == nil || acct.Nonce != 3 {
		t.Fatalf("cheated nonce after revert: %+v", acct)
	}
}

// TestReset: a reset goes back to genesis with nothing pending, pooled or
// snapshotted, and survives a restart.
func TestReset(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := newManualHarness(t, dir, 0)
	h.transfer(0, common.Address{0xc1}, 1)
	cheatNow(t, h.seq, SetBalance(common.Address{0xc2}, uint256.NewInt(5)))
	if err := h.seq.Mine(ctx, MineOptions{Blocks: 3}); err != nil {
		t.Fatal(err)
	}
	h.transfer(0, common.Address{0xc1}, 1)
	h.seq.Snapshot(ctx)
	if err := h.seq.Reset(ctx, ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(h *harness, step string) {
		t.Helper()
		if n := h.chain.Head().Number.Uint64(); n != 0 {
			t.Fatalf("%s: head %d", step, n)
		}
		if h.seq.pool.Len() != 0 || len(h.seq.Snapshots()) != 0 || len(h.src.Current().Txs) != 0 {
			t.Fatalf("%s: pool %d snapshots %d pending txs %d", step, h.seq.pool.Len(), len(h.seq.Snapshots()), len(h.src.Current().Txs))
		}
		if b := balance(t, h.src.Current().State, common.Address{0xc2}); !b.IsZero() {
			t.Fatalf("%s: cheat survived the reset: %v", step, b)
		}
	}
	check(h, "reset")
	h.stop()
	h2 := newManualHarness(t, dir, 0)
	defer h2.stop()
	check(h2, "restarted")
}
