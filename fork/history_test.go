package fork_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// below is what the differential test drives: the local chain and a fork
// of the same genesis.
type below interface {
	sequencer.Chain
	StateReader(root common.Hash) (state.Reader, error)
}

var (
	fresh    = common.HexToAddress("0x000000000000000000000000000000000000f5e5")
	deployed = []byte{0x60, 0x00, 0x56} // PUSH1 0 JUMP: any code will do
)

// edits are the state changes of each block, as cheats or transactions make
// them: new and zeroed slots, balances, a new contract, an account destroyed,
// then created again with other storage, deleted slots read back.
var edits = []func(db *state.StateDB){
	func(db *state.StateDB) {
		db.SetState(box, common.Hash{}, common.Hash{})            // 42 → 0
		db.SetState(box, common.Hash{31: 1}, common.Hash{31: 11}) // new
		db.SetBalance(chain.DevAccounts()[2], uint256.NewInt(5), tracing.BalanceChangeUnspecified)
		db.CreateAccount(fresh)
		db.SetCode(fresh, deployed, tracing.CodeChangeUnspecified)
		db.SetState(fresh, common.Hash{31: 7}, common.Hash{31: 70})
	},
	func(db *state.StateDB) {
		db.SetState(box, common.Hash{31: 1}, common.Hash{31: 12})
		db.SelfDestruct(fresh) // gone with its storage
	},
	func(db *state.StateDB) {
		db.SetState(box, common.Hash{}, common.Hash{31: 3})
		db.CreateAccount(fresh) // again, without the old slot
		db.SetState(fresh, common.Hash{31: 8}, common.Hash{31: 80})
		db.SetNonce(fresh, 1, tracing.NonceChangeUnspecified)
	},
	func(db *state.StateDB) {
		db.SelfDestruct(box) // storage that came from the upstream is wiped too, then it is created again
		db.Finalise(true)
		db.CreateAccount(box) // not empty (a nonce), so it stays
		db.SetNonce(box, 1, tracing.NonceChangeUnspecified)
		db.SetState(box, common.Hash{31: 9}, common.Hash{31: 90})
	},
}

// seal applies edit on the head of c as the sequencer would and inserts the
// block; it returns the block's state root.
func seal(t testing.TB, c below, edit func(*state.StateDB)) common.Hash {
	t.Helper()
	parent := c.Head()
	db, err := c.StateAt(parent)
	if err != nil {
		t.Fatal(err)
	}
	edit(db)
	cfg := c.Config()
	h := &types.Header{
		ParentHash: parent.Hash(), Number: new(big.Int).Add(parent.Number, common.Big1), GasLimit: parent.GasLimit,
		Time: parent.Time + 1, Difficulty: new(big.Int), BaseFee: parent.BaseFee,
		Root: db.IntermediateRoot(cfg.IsEIP158(parent.Number)),
	}
	block := types.NewBlock(h, &types.Body{}, nil, trie.NewStackTrie(nil), cfg)
	root, err := c.InsertSealed(block, nil, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(root); err != nil {
		t.Fatal(err)
	}
	return root
}

// Local blocks' history over forked state reads exactly as go-ethereum's own
// state does after the same changes, at every block.
func TestHistoryMatchesLocalChain(t *testing.T) {
	// Shanghai rules: before Cancun (EIP-6780) an account with storage can
	// be destroyed, so wiping upstream storage is covered too.
	g := chain.DevGenesis()
	cfg := *g.Config
	cfg.CancunTime, cfg.PragueTime, cfg.OsakaTime, cfg.BlobScheduleConfig = nil, nil, nil, nil
	g.Config = &cfg
	g.Alloc[box] = types.Account{Code: boxCode, Balance: big.NewInt(1), Storage: map[common.Hash]common.Hash{
		{}: common.BigToHash(big.NewInt(42)), {31: 2}: {31: 22},
	}}
	up := startNode(t, node.Config{Genesis: g, HTTPAddr: "127.0.0.1", Logger: quiet()})
	zero := uint64(0)
	fc, err := fork.Open(fork.Config{URL: up.URL(), Block: &zero, Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	lc, err := chain.Open(chain.Config{Genesis: g, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()

	addrs := []common.Address{box, fresh, chain.DevAccounts()[2], chain.DevAccounts()[3], {}}
	slots := []common.Hash{{}, {31: 1}, {31: 2}, {31: 7}, {31: 8}, {31: 9}}
	var roots [][2]common.Hash
	for _, edit := range edits {
		roots = append(roots, [2]common.Hash{seal(t, lc, edit), seal(t, fc, edit)})
	}
	for i, r := range roots {
		want, err := lc.StateReader(r[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := fc.StateReader(r[1])
		if err != nil {
			t.Fatalf("block %d: %v", i+1, err)
		}
		for _, a := range addrs {
			wa, _ := want.Account(a)
			ga, err := got.Account(a)
			if err != nil {
				t.Fatal(err)
			}
			if (wa == nil) != (ga == nil) {
				t.Fatalf("block %d account %s: fork %+v, local %+v", i+1, a, ga, wa)
			}
			if wa != nil && (!wa.Balance.Eq(ga.Balance) || wa.Nonce != ga.Nonce || common.BytesToHash(wa.CodeHash) != common.BytesToHash(ga.CodeHash) ||
				(wa.Root == types.EmptyRootHash) != (ga.Root == types.EmptyRootHash)) {
				t.Fatalf("block %d account %s: fork %+v, local %+v", i+1, a, ga, wa)
			}
			for _, k := range slots {
				wv, _ := want.Storage(a, k)
				gv, err := got.Storage(a, k)
				if err != nil {
					t.Fatal(err)
				}
				if wv != gv {
					t.Fatalf("block %d slot %s of %s: fork %s, local %s", i+1, k, a, gv, wv)
				}
			}
		}
	}
	// The roots name each state once, and a replay of the same changes on
	// the same parent gives the same root (WAL recovery relies on it).
	seen := map[common.Hash]bool{}
	for _, r := range roots {
		if seen[r[1]] {
			t.Fatalf("root %s names two states", r[1])
		}
		seen[r[1]] = true
	}
	head := fc.Head()
	db, _ := fc.StateAt(head)
	edits[0](db)
	again, _ := fc.StateAt(head)
	edits[0](again)
	if a, b := db.IntermediateRoot(true), again.IntermediateRoot(true); a != b {
		t.Fatalf("same changes, two roots: %s %s", a, b)
	}
}

// Reset forks again at another block: local blocks and their state are
// gone, the new fork block's state is the upstream's.
func TestReset(t *testing.T) {
	up := upstreamNode(t)
	fc, err := fork.Open(fork.Config{URL: up.URL(), Dir: t.TempDir(), Logger: quiet(), Client: fastClient})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	first := fc.ForkBlock()
	root := seal(t, fc, func(db *state.StateDB) { db.SetState(box, common.Hash{}, common.Hash{31: 99}) })
	if r, _ := fc.StateReader(root); r == nil {
		t.Fatal("no state at the local block")
	}
	send(t, up.URL(), devKey(t, 0), chain.DevChainID, append(selSet, arg(5)...))
	deadline := time.Now().Add(10 * time.Second)
	for up.Chain.Head().Number.Uint64() <= first.Number.Uint64()+1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	sealedHead := up.Chain.Head().Number.Uint64()
	if err := fc.Reset(context.Background(), "", &sealedHead); err != nil {
		t.Fatal(err)
	}
	if h := fc.Head(); h.Number.Uint64() != sealedHead || h.Hash() != up.Chain.HeaderByNumber(sealedHead).Hash() {
		t.Fatalf("head after reset: %d %s", h.Number, h.Hash())
	}
	if _, err := fc.StateReader(root); err == nil {
		t.Fatal("the old local block's state is still there")
	}
	r, err := fc.StateReader(fc.Head().Root)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := up.Chain.StateReader(fc.Head().Root)
	for _, k := range []common.Hash{{}, {31: 1}} {
		got, err := r.Storage(box, k)
		w, _ := want.Storage(box, k)
		if err != nil || got != w {
			t.Fatalf("slot %s after reset: %s (%v), upstream %s", k, got, err, w)
		}
	}
	// Another chain is refused.
	other := upstreamNodeWithID(t, 999)
	if err := fc.Reset(context.Background(), other.URL(), nil); !errors.Is(err, fork.ErrForkMismatch) {
		t.Fatalf("reset onto another chain: %v", err)
	}
}

// SetHead rewinds to an earlier local block: its state is the head's again,
// later blocks and their states are gone, and blocks can be sealed anew.
func TestSetHead(t *testing.T) {
	up := upstreamNode(t)
	fc, err := fork.Open(fork.Config{URL: up.URL(), Dir: t.TempDir(), Logger: quiet(), Client: fastClient})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	value := func(root common.Hash) common.Hash {
		r, err := fc.StateReader(root)
		if err != nil {
			t.Fatal(err)
		}
		v, err := r.Storage(box, common.Hash{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := seal(t, fc, func(db *state.StateDB) { db.SetState(box, common.Hash{}, common.Hash{31: 1}) })
	keep := fc.Head()
	second := seal(t, fc, func(db *state.StateDB) {
		db.SetState(box, common.Hash{}, common.Hash{31: 2})
		db.SetBalance(fresh, uint256.NewInt(9), tracing.BalanceChangeUnspecified)
	})
	if value(second) != (common.Hash{31: 2}) {
		t.Fatal("second block not applied")
	}
	if err := fc.SetHead(keep.Number.Uint64()); err != nil {
		t.Fatal(err)
	}
	if fc.Head().Hash() != keep.Hash() || fc.HeaderByNumber(keep.Number.Uint64()+1) != nil {
		t.Fatalf("head after rewind: %d", fc.Head().Number)
	}
	if _, err := fc.StateReader(second); err == nil {
		t.Fatal("the rewound block's state is still there")
	}
	if value(first) != (common.Hash{31: 1}) {
		t.Fatal("the kept block's state changed")
	}
	r, _ := fc.StateReader(first)
	if a, _ := r.Account(fresh); a != nil {
		t.Fatalf("an account of the rewound block is still there: %+v", a)
	}
	again := seal(t, fc, func(db *state.StateDB) { db.SetState(box, common.Hash{}, common.Hash{31: 3}) })
	if value(again) != (common.Hash{31: 3}) || fc.Head().Number.Uint64() != keep.Number.Uint64()+1 {
		t.Fatal("sealing after a rewind")
	}
	// The new block at the rewound block's height does not see its writes.
	r, _ = fc.StateReader(again)
	if a, _ := r.Account(fresh); a != nil {
		t.Fatalf("the rewound block's account leaked into the block sealed at its height: %+v", a)
	}
	if err := fc.SetHead(fc.ForkBlock().Number.Uint64() - 1); err == nil {
		t.Fatal("rewound below the fork block")
	}
}
