package sequencer

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/holiman/uint256"
)

// cheatAll makes one write of each kind on addr.
func cheatAll(addr common.Address) []Write {
	return []Write{
		SetBalance(addr, uint256.NewInt(12345)),
		SetNonce(addr, 7),
		SetCode(addr, []byte{0x60, 0x01}),
		SetStorage(addr, common.Hash{1}, common.Hash{31: 2}),
	}
}

func cheatNow(t *testing.T, s *Sequencer, writes ...Write) {
	t.Helper()
	if err := s.Cheat(context.Background(), func(StateView) ([]Write, error) { return writes, nil }); err != nil {
		t.Fatal(err)
	}
}

// checkCheated checks that r holds what cheatAll wrote on addr.
func checkCheated(t *testing.T, where string, r state.Reader, addr common.Address) {
	t.Helper()
	acct, err := r.Account(addr)
	if err != nil || acct == nil {
		t.Fatalf("%s: account %v: %v", where, acct, err)
	}
	if acct.Balance.Uint64() != 12345 || acct.Nonce != 7 {
		t.Errorf("%s: balance %v nonce %d", where, acct.Balance, acct.Nonce)
	}
	if code := r.Code(addr, common.BytesToHash(acct.CodeHash)); !bytes.Equal(code, []byte{0x60, 0x01}) {
		t.Errorf("%s: code %x", where, code)
	}
	if v, _ := r.Storage(addr, common.Hash{1}); v != (common.Hash{31: 2}) {
		t.Errorf("%s: slot 1 = %v", where, v)
	}
}

// TestCheatPendingAtOnce: a cheat is in the pending snapshot when Cheat
// returns (a flashblock of its own), not in latest until the block is
// sealed, and then in latest.
func TestCheatPendingAtOnce(t *testing.T) {
	h := newManualHarness(t, "", testInterval)
	defer h.stop()
	addr := common.Address{0xc1}
	before := h.src.Current()
	cheatNow(t, h.seq, cheatAll(addr)...)
	snap := h.src.Current()
	if snap == before || snap.Index != before.Index+1 || snap.NewTxs != 0 {
		t.Fatalf("no flashblock of the cheat: index %d → %d", before.Index, snap.Index)
	}
	checkCheated(t, "pending", snap.State, addr)
	if snap.Diff.Accounts[addr] == nil || snap.Diff.Storage[addr][common.Hash{1}] != (common.Hash{31: 2}) {
		t.Errorf("the flashblock's diff lacks the cheat: %+v", snap.Diff)
	}
	head, _ := h.chain.StateReader(h.chain.Head().Root)
	if acct, _ := head.Account(addr); acct != nil {
		t.Fatalf("latest has the cheat before the seal: %+v", acct)
	}
	if err := h.seq.Mine(context.Background(), MineOptions{Blocks: 1}); err != nil {
		t.Fatal(err)
	}
	latest, _ := h.chain.StateReader(h.chain.Head().Root)
	checkCheated(t, "latest", latest, addr)
}

// TestCheatRefused: a plan's error and a malformed write change nothing
// and leave the sequencer running.
func TestCheatRefused(t *testing.T) {
	h := newManualHarness(t, "", testInterval)
	defer h.stop()
	before := h.src.Current()
	bad := errors.New("no")
	err := h.seq.Cheat(context.Background(), func(StateView) ([]Write, error) { return nil, bad })
	var refused *RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, bad) {
		t.Fatalf("plan error: %v", err)
	}
	err = h.seq.Cheat(context.Background(), func(StateView) ([]Write, error) {
		return []Write{SetBalance(common.Address{1}, uint256.NewInt(1)), {Kind: WriteStorage, Value: []byte{1}}}, nil
	})
	if !errors.As(err, &refused) {
		t.Fatalf("malformed write: %v", err)
	}
	if h.src.Current() != before || h.seq.Err() != nil {
		t.Fatalf("a refused cheat changed pending (%v) or stopped the sequencer (%v)", h.src.Current() != before, h.seq.Err())
	}
}

// TestCheatRecovered: cheats logged in the open block come back from the
// WAL after a restart, in their place among transactions (a transfer that
// only a cheated balance pays for replays), and a block re-opened at a
// later time keeps them.
func TestCheatRecovered(t *testing.T) {
	dir := t.TempDir()
	h := newManualHarness(t, dir, testInterval)
	addr := common.Address{0xc2}
	cheatNow(t, h.seq, cheatAll(addr)...)
	// Fund a fresh key by cheat and spend from it: the transfer replays
	// only after the cheat.
	poor := h.keys[9]
	cheatNow(t, h.seq, SetBalance(addressOf(poor), uint256.NewInt(1e18)), SetNonce(addressOf(poor), 0))
	tx := h.transfer(9, common.Address{0xc3}, 5)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
	before := h.src.Current()
	h.stop()

	h2 := newManualHarness(t, dir, testInterval)
	after := h2.src.Current()
	if after.Header.Root != before.Header.Root || !h2.preconfirmed(tx) {
		t.Fatalf("recovered pending root %v (was %v), tx pre-confirmed %v", after.Header.Root, before.Header.Root, h2.preconfirmed(tx))
	}
	checkCheated(t, "recovered pending", after.State, addr)
	if err := h2.seq.Mine(context.Background(), MineOptions{Blocks: 1}); err != nil {
		t.Fatal(err)
	}
	latest, _ := h2.chain.StateReader(h2.chain.Head().Root)
	checkCheated(t, "sealed after recovery", latest, addr)
	h2.stop()
}

// TestCheatKeptByReopen: under manual mining an empty block is re-opened at
// the time of its first transaction; cheats applied before stay, also
// after a restart (the re-opened index 0 logs them again).
func TestCheatKeptByReopen(t *testing.T) {
	dir := t.TempDir()
	h := newManualHarness(t, dir, testInterval)
	addr := common.Address{0xc4}
	cheatNow(t, h.seq, cheatAll(addr)...)
	opened := h.src.Current().Header.Time
	h.waitFor("a new second", func() bool { return uint64(nowUnix()) > opened })
	tx := h.transfer(0, common.Address{0xc5}, 1)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
	snap := h.src.Current()
	if snap.Header.Time <= opened {
		t.Fatalf("block not re-opened (time %d, opened %d)", snap.Header.Time, opened)
	}
	checkCheated(t, "re-opened", snap.State, addr)
	h.stop()
	h2 := newManualHarness(t, dir, testInterval)
	defer h2.stop()
	if got := h2.src.Current(); got.Header.Root != snap.Header.Root || got.Header.Time != snap.Header.Time {
		t.Fatalf("recovered root %v time %d, want %v %d", got.Header.Root, got.Header.Time, snap.Header.Root, snap.Header.Time)
	}
	checkCheated(t, "re-opened, recovered", h2.src.Current().State, addr)
}

func asRefused(err error, target **RefusedError) bool { return errors.As(err, target) }
