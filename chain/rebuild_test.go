package chain

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/pebblestore"
)

// waitGenerated waits (at most a minute) for the state snapshot's
// generation to end.
func waitGenerated(t *testing.T, c *Chain) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for c.SnapshotGenerating() {
		if time.Now().After(deadline) {
			t.Fatal("the snapshot is still being generated after a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSetHeadWithinSnapshotLayers: a rewind to a block whose layer the
// snapshot still holds in memory flattens onto it: no regeneration.
func TestSetHeadWithinSnapshotLayers(t *testing.T) {
	c, err := Open(Config{Dir: t.TempDir(), Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitGenerated(t, c)
	who := common.Address{0x44}
	var roots []common.Hash
	for range 5 {
		roots = append(roots, sealOn(t, c, who, 1).Root())
	}
	snaps := c.bc.Snapshots()
	if snaps.Snapshot(roots[1]) == nil {
		t.Fatal("block 2's snapshot layer is gone three blocks later")
	}
	if err := c.SetHead(2); err != nil {
		t.Fatal(err)
	}
	if got := snaps.DiskRoot(); got != roots[1] {
		t.Fatalf("disk layer %s after the rewind, want block 2's root %s", got, roots[1])
	}
	if c.SnapshotGenerating() {
		t.Fatal("the rewind regenerated the snapshot")
	}
	r, err := c.StateReader(c.Head().Root)
	if err != nil {
		t.Fatal(err)
	}
	if acct, _ := r.Account(who); acct == nil || acct.Balance.Uint64() != 2 {
		t.Fatalf("balance at block 2: %v", acct)
	}
}

// TestSetHeadRebuildsOverFinishedGenerator: go-ethereum's snapshot
// generator keeps its two database iterators open once done, until it is
// told to stop, and Rebuild tells only one still running. Two rewinds below
// the snapshot's layers with no block between make the second rebuild over
// the first's finished generator (evm_revert to an older snapshot,
// anvil_reset); its iterators must be released then, not held for the life
// of the process (Close would wait pebblestore.CloseWait and fail, as CI once
// saw).
func TestSetHeadRebuildsOverFinishedGenerator(t *testing.T) {
	t.Run("done", func(t *testing.T) { testRebuilds(t, DevGenesis(), true, snapshotLayers+3) })
	// A genesis big enough for its generation to be under way at the
	// first rewind (go-ethereum then keeps 8 layers): the generator stopped
	// then must not be told twice (a hang) nor left behind.
	large := DevGenesis()
	for i := range 20000 {
		large.Alloc[common.BigToAddress(big.NewInt(int64(0xb17000+i)))] = types.Account{Balance: big.NewInt(1)}
	}
	t.Run("running", func(t *testing.T) { testRebuilds(t, large, false, 8+4) })
}

// testRebuilds seals blocks on g (waiting for the snapshot's generation
// first when wait is set), rewinds to 2, 1 and 0, below the layers the
// snapshot keeps, and closes.
func testRebuilds(t *testing.T, g *core.Genesis, wait bool, blocks int) {
	defer func(w time.Duration) { pebblestore.CloseWait = w }(pebblestore.CloseWait)
	pebblestore.CloseWait = time.Second
	c, err := Open(Config{Dir: t.TempDir(), Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	who := common.Address{0x44}
	var roots []common.Hash
	for range blocks {
		roots = append(roots, sealOn(t, c, who, 1).Root())
	}
	if wait {
		waitGenerated(t, c)
	} else if !c.SnapshotGenerating() {
		t.Fatal("the generation ended before the first rewind: make the genesis bigger")
	}
	if c.bc.Snapshots().Snapshot(roots[1]) != nil {
		t.Fatal("block 2 still has a snapshot layer: seal more blocks")
	}
	// Block n credits who 1 wei: its balance at block n is n.
	steps := []struct {
		to  uint64
		why string
	}{
		{2, "rebuilt from block 2"},
		{1, "rebuilt from block 1, over block 2's generator"},
		{0, "rebuilt from the genesis, over block 1's generator"},
	}
	for _, s := range steps {
		if err := c.SetHead(s.to); err != nil {
			t.Fatalf("%s: %v", s.why, err)
		}
		if wait {
			waitGenerated(t, c)
		}
		r, err := c.StateReader(c.Head().Root)
		if err != nil {
			t.Fatal(err)
		}
		var got uint64
		if acct, _ := r.Account(who); acct != nil {
			got = acct.Balance.Uint64()
		}
		if got != s.to {
			t.Fatalf("%s: balance %d, want %d", s.why, got, s.to)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
