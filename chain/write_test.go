package chain

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// TestInsertSealedAndFlush seals a block over the dev genesis the way the
// sequencer does (a state change, the block, InsertSealed, Flush) and checks
// that it is the head with its state, and that after Flush the datadir holds
// it on its own: a reopened chain starts from it.
func TestInsertSealedAndFlush(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{Dir: dir, Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	parent := c.Head()
	statedb, err := c.StateAt(parent)
	if err != nil {
		t.Fatal(err)
	}
	who := common.Address{0x42}
	statedb.AddBalance(who, uint256.NewInt(7), tracing.BalanceChangeUnspecified)
	header := &types.Header{
		ParentHash: parent.Hash(), Number: big.NewInt(1), GasLimit: parent.GasLimit, Time: parent.Time + 2,
		Difficulty: new(big.Int), BaseFee: parent.BaseFee, Root: statedb.IntermediateRoot(true),
	}
	block := types.NewBlock(header, &types.Body{}, nil, trie.NewStackTrie(nil), c.Config())
	root, err := c.InsertSealed(block, types.Receipts{}, statedb)
	if err != nil {
		t.Fatal(err)
	}
	if root != header.Root {
		t.Fatalf("committed root %v, block says %v", root, header.Root)
	}
	if h := c.Head(); h.Hash() != block.Hash() {
		t.Fatalf("head %d %v, want the sealed block %v", h.Number, h.Hash(), block.Hash())
	}
	if got := c.BlockByNumber(1); got == nil || got.Hash() != block.Hash() {
		t.Fatalf("block 1 = %v", got)
	}
	balance := func(c *Chain) uint64 {
		t.Helper()
		r, err := c.StateReader(c.Head().Root)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := r.Account(who)
		if err != nil || acct == nil {
			t.Fatalf("account: %v %v", acct, err)
		}
		return acct.Balance.Uint64()
	}
	if b := balance(c); b != 7 {
		t.Fatalf("balance %d, want 7", b)
	}
	if err := c.Flush(root); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Open(Config{Dir: dir, Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := c.Head(); h.Hash() != block.Hash() {
		t.Fatalf("reopened head %d %v, want the sealed block %v", h.Number, h.Hash(), block.Hash())
	}
	if b := balance(c); b != 7 {
		t.Fatalf("reopened balance %d, want 7", b)
	}
}

// sealOn seals a block on the head crediting who with v wei, holding txs
// (not executed: InsertSealed stores what it is given).
func sealOn(t *testing.T, c *Chain, who common.Address, v uint64, txs ...*types.Transaction) *types.Block {
	t.Helper()
	parent := c.Head()
	statedb, err := c.StateAt(parent)
	if err != nil {
		t.Fatal(err)
	}
	statedb.AddBalance(who, uint256.NewInt(v), tracing.BalanceChangeUnspecified)
	header := &types.Header{
		ParentHash: parent.Hash(), Number: new(big.Int).Add(parent.Number, big.NewInt(1)), GasLimit: parent.GasLimit, Time: parent.Time + 2,
		Difficulty: new(big.Int), BaseFee: parent.BaseFee, Root: statedb.IntermediateRoot(true),
	}
	block := types.NewBlock(header, &types.Body{Transactions: txs}, nil, trie.NewStackTrie(nil), c.Config())
	root, err := c.InsertSealed(block, make(types.Receipts, len(txs)), statedb)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(root); err != nil {
		t.Fatal(err)
	}
	return block
}

// TestSetHead rewinds three sealed blocks to the first: the head, its
// state, the lookups of the dropped blocks' transactions and a reopened
// datadir all say block 1, and the chain goes on from it. In memory (no
// datadir: no trie commit in Flush, no state snapshot) the same holds, and
// every older block's state stays readable. It runs on the plain-Ethereum
// dev chain: sealOn builds blocks without Isthmus's withdrawals.
func TestSetHead(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func() string
	}{{"datadir", t.TempDir}, {"memory", func() string { return "" }}} {
		t.Run(tc.name, func(t *testing.T) { testSetHead(t, tc.dir()) })
	}
}

func testSetHead(t *testing.T, dir string) {
	c, err := Open(Config{Dir: dir, Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	who := common.Address{0x43}
	b1 := sealOn(t, c, who, 7)
	b2old := sealOn(t, c, who, 1)
	tx := types.NewTx(&types.LegacyTx{Nonce: 1, Gas: 21000, GasPrice: big.NewInt(1), To: &who})
	sealOn(t, c, who, 1, tx)
	if _, _, _, _, ok := c.TxLookup(tx.Hash()); !ok {
		t.Fatal("the transaction of block 3 is not found before the rewind")
	}
	balanceAt := func(c *Chain, root common.Hash) uint64 {
		t.Helper()
		r, err := c.StateReader(root)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := r.Account(who)
		if err != nil || acct == nil {
			t.Fatalf("account at %v: %v %v", root, acct, err)
		}
		return acct.Balance.Uint64()
	}
	for _, want := range []struct {
		b *types.Block
		v uint64
	}{{b1, 7}, {b2old, 8}, {c.BlockByNumber(3), 9}} {
		if got := balanceAt(c, want.b.Root()); got != want.v {
			t.Fatalf("balance at block %d: %d, want %d", want.b.NumberU64(), got, want.v)
		}
		statedb, err := c.StateAt(want.b.Header())
		if err != nil || statedb.GetBalance(who).Uint64() != want.v {
			t.Fatalf("StateDB at block %d: %v", want.b.NumberU64(), err)
		}
	}
	if err := c.SetHead(1); err != nil {
		t.Fatal(err)
	}
	if h := c.Head(); h.Hash() != b1.Hash() || balanceAt(c, h.Root) != 7 {
		t.Fatalf("head %d balance %d, want block 1 and 7", h.Number, balanceAt(c, h.Root))
	}
	if c.BlockByNumber(2) != nil || c.BlockByNumber(3) != nil {
		t.Fatal("blocks above the new head are still canonical")
	}
	if _, _, _, _, ok := c.TxLookup(tx.Hash()); ok {
		t.Fatal("the dropped block's transaction is still found")
	}
	if err := c.SetHead(5); err == nil {
		t.Fatal("set head above the head accepted")
	}
	b2 := sealOn(t, c, who, 100)
	if balanceAt(c, c.Head().Root) != 107 || c.Head().Hash() != b2.Hash() {
		t.Fatalf("after a new block 2: balance %d", balanceAt(c, c.Head().Root))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		return // nothing to reopen
	}
	c, err = Open(Config{Dir: dir, Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Head().Hash() != b2.Hash() || balanceAt(c, c.Head().Root) != 107 {
		t.Fatalf("reopened: head %d %v, balance %d", c.Head().Number, c.Head().Hash(), balanceAt(c, c.Head().Root))
	}
}
