// Package blockexec executes one block under its chain's rules at the
// block's time: opening it on its parent's state (the environment, an EVM
// made by forkrules.NewEVM, the gas pool, the system calls that precede the
// first transaction), applying transactions one at a time (each receipt with
// the fields op-geth serves with the sealed block's), on an OP-stack chain a
// fork's upgrade deposits in its activation block, showing the block so far
// as a flashblock, and finalising it (the system calls after the last
// transaction, the requests, the withdrawals, the roots).
//
// The sequencer builds its blocks with it (fork mode through the sequencer),
// the follower re-executes another builder's flashblocks with it: a rule of
// execution changes here, once, for both.
//
// Invariants:
//   - Which EVM, instruction set, precompiles and transaction checks a block
//     gets is decided in forkrules (Open: forkrules.Check, forkrules.NewEVM);
//     a block at a fork preconf does not implement never opens.
//   - Txs, Receipts, Gas, BlobGas and the DA footprint describe exactly the
//     transactions applied: Apply changes all of them or, on error, none
//     (the state and the gas pool are reverted).
//   - The block's execution is op-geth's: the blocks Finalise returns are
//     the ones op-geth's block processing accepts, roots and gas included
//     (TestBlockAsGoEthereum).
//   - A Block belongs to one goroutine; readers see it only through the
//     immutable pending snapshots its callers assemble from Flashblock.
package blockexec

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
)

// Block is a block being executed. It is used by one goroutine: its StateDB
// and EVM are not safe for concurrent use.
type Block struct {
	Config *params.ChainConfig
	Parent *types.Header
	// Header is the block's environment (pending.NewHeader): never changed;
	// Flashblock and Finalise fill copies.
	Header  *types.Header
	StateDB *state.StateDB
	EVM     *vm.EVM
	Gas     *core.GasPool
	// Txs and Receipts are the transactions applied so far, in order.
	Txs      types.Transactions
	Receipts types.Receipts
	// BlobGas is the EIP-4844 blob gas used so far.
	BlobGas uint64
	// Touched records what the block's execution writes (pending.Diff).
	Touched *pending.Tracker
	// Activation: on an OP-stack chain, a fork with upgrade deposits
	// activates in this block (ApplyUpgrades). Such a block carries no
	// sequenced transaction: the rollup node drops a batch with one.
	Activation bool

	roots *pending.Roots // of Txs and Receipts, kept as they grow
	bloom types.Bloom    // of the receipts shown so far (Flashblock)
	l1    *opstack.L1Info

	// Jovian's DA footprint so far (countDA).
	jovian   bool
	da       uint64
	daScalar uint64
	daErr    error
	daUser   bool // a non-deposit transaction was applied
}

// Open opens the block with environment header on its parent, over statedb
// (a StateDB of the parent's state, the block's own), and runs the system
// calls that precede its first transaction: the Canyon create2 deployer,
// EIP-4788's beacon root, EIP-2935's parent hash. chain serves canonical
// headers to BLOCKHASH. A block at a time whose rules preconf does not
// implement is refused (forkrules.Check).
func Open(config *params.ChainConfig, chain core.ChainContext, parent, header *types.Header, statedb *state.StateDB) (*Block, error) {
	if err := forkrules.Check(config, header.Time); err != nil {
		return nil, fmt.Errorf("block %d: %w", header.Number, err)
	}
	t := pending.NewTracker()
	coinbase := header.Coinbase
	blockCtx := core.NewEVMBlockContext(header, chain, &coinbase, config, statedb)
	b := &Block{
		Config: config, Parent: parent, Header: header, StateDB: statedb,
		EVM: forkrules.NewEVM(blockCtx, state.NewHookedState(statedb, t.Hooks()), config, vm.Config{}),
		Gas: core.NewGasPool(header.GasLimit), Touched: t,
		Activation: config.Optimism != nil && opstack.Activates(config, header.Time, parent.Time),
		jovian:     config.IsJovian(header.Time),
	}
	PreSystemCalls(config, header, parent.Hash(), b.EVM)
	return b, nil
}

// Apply executes tx, whose message is msg, as the block's next transaction
// and returns its receipt. On an OP-stack chain a transaction after the
// block's first, when that is a deposit (the L1-attributes one), gets the L1
// fee fields op-geth derives for the sealed block's receipts. On error the
// block is left as it was.
func (b *Block) Apply(tx *types.Transaction, msg *core.Message) (*types.Receipt, error) {
	idx := len(b.Txs)
	b.StateDB.SetTxContext(tx.Hash(), idx)
	snap, gas := b.StateDB.Snapshot(), b.Gas.Snapshot()
	receipt, err := core.ApplyTransactionWithEVM(msg, b.Gas, b.StateDB, b.Header.Number, common.Hash{}, b.Header.Time, tx, b.EVM)
	if err == nil && idx > 0 && b.Config.Optimism != nil && b.Txs[0].IsDepositTx() {
		err = opstack.DeriveReceipt(b.Config, b.Header, b.Txs[0], tx, receipt)
	}
	if err != nil {
		b.StateDB.RevertToSnapshot(snap)
		b.Gas.Set(gas)
		return nil, err
	}
	b.Txs = append(b.Txs, tx)
	b.Receipts = append(b.Receipts, receipt)
	b.BlobGas += receipt.BlobGasUsed
	b.countDA(idx, tx)
	return receipt, nil
}

// Roots are the roots of the block's transactions and receipts so far,
// hashing only what was added since the last call (flashblocks and the seal
// share them).
func (b *Block) Roots() (txHash, receiptHash common.Hash) {
	if b.roots == nil {
		b.roots = pending.NewRoots()
	}
	return b.roots.Update(b.Txs, b.Receipts)
}

// Flashblock is the block so far as a flashblock shows it, its transactions
// from first on new: environment, gas, transactions and receipts with their
// roots, bloom, DA footprint, and the state written since the last
// flashblock (Diff). The caller sets what it alone knows: the state root
// (computed, or a builder's claim), the index, the payload id, the pending
// state and, on OP-stack chains from Isthmus on, the withdrawals root.
func (b *Block) Flashblock(first int) (pending.Flashblock, error) {
	da, err := b.DAFootprint()
	if err != nil {
		return pending.Flashblock{}, err
	}
	f := pending.Flashblock{
		Parent: b.Parent, Env: b.Header, GasUsed: b.Gas.Used(),
		Txs: b.Txs, Receipts: b.Receipts, First: first, Bloom: &b.bloom,
		Diff: b.Touched.Collect(b.StateDB), DAFootprint: da,
	}
	if len(b.Txs) > 0 {
		txHash, receiptHash := b.Roots()
		f.TxHash, f.ReceiptHash = &txHash, &receiptHash
	}
	return f, nil
}
