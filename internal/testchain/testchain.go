// Package testchain generates OP-stack chains for tests with op-geth's own
// block generator (core.GenerateChain): every block opens with the
// L1-attributes deposit (opstack.DevL1 as the L1), then user deposits (one
// minting and transferring, some failing), then user transactions that pay
// the L1 data and operator fees (transfers with calldata, storage writes
// with logs, withdrawals through the L2ToL1MessagePasser, a contract
// creation). Each block is also cut into flashblocks as Base's builders cut
// them (the deposits at index 0, user transactions after), and every
// flashblock's cumulative header and post-state are op-geth's: the header is
// that of the block op-geth generates from the same parent with the
// flashblock's prefix of transactions, so the last one is the block itself.
package testchain

import (
	"bytes"
	"crypto/ecdsa"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
)

// Store is a contract the generator adds to the genesis:
// SSTORE(calldata[0:32], calldata[32:64]), then LOG1(key).
var (
	Store     = common.HexToAddress("0x00000000000000000000000000000000005707e0")
	storeCode = []byte{
		0x60, 0x20, 0x35, 0x60, 0x00, 0x35, 0x55, // SSTORE(cd[0], cd[32])
		0x60, 0x00, 0x35, 0x60, 0x00, 0x60, 0x00, 0xa1, // LOG1(topic cd[0])
		0x00,
	}
)

// Config shapes a generated chain.
type Config struct {
	// Genesis is an OP-stack genesis through Isthmus at least (e.g.
	// chain.DevL2Genesis()); Store is added to its alloc.
	Genesis *core.Genesis
	// Keys sign the user transactions; they must be funded in Genesis.
	Keys []*ecdsa.PrivateKey
	// Blocks to generate; user transactions per block; user transactions
	// per flashblock after index 0 (defaults 4, 6, 2).
	Blocks, TxsPerBlock, PerFlashblock int
	// BlockTime of the L2 in seconds (default 2).
	BlockTime uint64
	// L1 is the simulated L1 (default: 12 s blocks, 1 gwei base fee, 1 wei
	// blob base fee, Base-like scalars, a nonzero operator fee).
	L1 *opstack.DevL1
}

// Chain is a generated chain.
type Chain struct {
	Config  *params.ChainConfig
	Genesis *core.Genesis // with Store in its alloc
	Blocks  []*Block

	genesisBlock *types.Block
	db           ethdb.Database
	sdb          state.Database
}

// Block is one generated block and its flashblocks.
type Block struct {
	*types.Block
	Receipts    types.Receipts
	L1          *opstack.L1Info
	Flashblocks []*Flashblock
}

// Flashblock is a prefix of a block as a builder announces it.
type Flashblock struct {
	Index int
	// Txs are the transactions new in this flashblock.
	Txs types.Transactions
	// Header is the block so far: the header op-geth generates for the
	// parent with the transactions up to this flashblock (state root,
	// receipts root, bloom, gas used, withdrawals root, …). Its hash is
	// the builder's block_hash.
	Header *types.Header
	// Receipts are the receipts so far, as op-geth made them.
	Receipts types.Receipts
}

// State opens the post-state of a block or flashblock header (read-only).
func (c *Chain) State(h *types.Header) (*state.StateDB, error) {
	return state.New(h.Root, c.sdb)
}

// RLP is the chain's blocks (not the genesis) in the `geth export` format.
func (c *Chain) RLP() []byte {
	var buf bytes.Buffer
	for _, b := range c.Blocks {
		if err := rlp.Encode(&buf, b.Block); err != nil {
			panic(err) // encoding a generated block cannot fail
		}
	}
	return buf.Bytes()
}

// withdrawalSig is L2ToL1MessagePasser.initiateWithdrawal(address,uint256,bytes).
var withdrawalSig = crypto.Keccak256([]byte("initiateWithdrawal(address,uint256,bytes)"))[:4]

// Generate builds the chain. It fails when op-geth rejects a transaction.
func Generate(cfg Config) (c *Chain, err error) {
	if cfg.Blocks == 0 {
		cfg.Blocks = 4
	}
	if cfg.TxsPerBlock == 0 {
		cfg.TxsPerBlock = 6
	}
	if cfg.PerFlashblock == 0 {
		cfg.PerFlashblock = 2
	}
	if cfg.BlockTime == 0 {
		cfg.BlockTime = 2
	}
	g := cfg.Genesis
	if g == nil || g.Config == nil || !g.Config.IsOptimismIsthmus(g.Timestamp) || len(cfg.Keys) == 0 {
		return nil, fmt.Errorf("testchain: need an OP-stack genesis with Isthmus active, and keys")
	}
	l1 := cfg.L1
	if l1 == nil {
		l1 = &opstack.DevL1{
			GenesisTime: g.Timestamp, GenesisNumber: 100, Batcher: common.HexToAddress("0xD059234409A70327B48c03F7BbD5317a758E315B"),
			BaseFee: big.NewInt(3_000_000_000), BlobBaseFee: big.NewInt(7),
			BaseFeeScalar: 1368, BlobBaseFeeScalar: 810_949, OperatorFeeScalar: 2_000_000, OperatorFeeConstant: 100_000,
			DAFootprintGasScalar: 400,
		}
	}
	g.Alloc[Store] = types.Account{Code: storeCode, Balance: new(big.Int)}
	db := rawdb.NewMemoryDatabase()
	tdb := triedb.NewDatabase(db, triedb.HashDefaults)
	genesis, err := g.Commit(db, tdb, nil)
	if err != nil {
		return nil, fmt.Errorf("testchain: genesis: %w", err)
	}
	c = &Chain{Config: g.Config, Genesis: g, genesisBlock: genesis, db: db, sdb: state.NewDatabase(tdb, nil)}
	defer func() {
		// core.GenerateChain panics on a transaction it cannot apply.
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("testchain: %v", r)
		}
	}()
	gen := &generator{cfg: cfg, config: g.Config, engine: beacon.New(ethash.NewFaker()), db: db, nonces: make([]uint64, len(cfg.Keys))}
	parent, parentL1 := genesis, (*opstack.L1Info)(nil)
	for i := range cfg.Blocks {
		time := parent.Time() + cfg.BlockTime
		info := l1.Next(parentL1, time)
		deposits, err := gen.deposits(info, parent, i)
		if err != nil {
			return nil, err
		}
		users := gen.userTxs(i)
		// Flashblock boundaries: the deposits, then PerFlashblock at a time.
		ends := []int{len(deposits)}
		for end := cfg.PerFlashblock; end < len(users); end += cfg.PerFlashblock {
			ends = append(ends, len(deposits)+end)
		}
		if len(users) > 0 {
			ends = append(ends, len(deposits)+len(users))
		}
		all := append(deposits, users...)
		blk := &Block{L1: info}
		start := 0
		for k, end := range ends {
			b, receipts := gen.block(parent, time, all[:end])
			blk.Flashblocks = append(blk.Flashblocks, &Flashblock{Index: k, Txs: all[start:end], Header: b.Header(), Receipts: receipts})
			blk.Block, blk.Receipts = b, receipts
			start = end
		}
		c.Blocks = append(c.Blocks, blk)
		parent, parentL1 = blk.Block, info
	}
	return c, nil
}

type generator struct {
	cfg    Config
	config *params.ChainConfig
	engine *beacon.Beacon
	db     ethdb.Database
	nonces []uint64
}

// block is the block op-geth generates on parent at time with txs.
func (g *generator) block(parent *types.Block, time uint64, txs types.Transactions) (*types.Block, types.Receipts) {
	blocks, receipts := core.GenerateChain(g.config, parent, g.engine, g.db, 1, func(_ int, b *core.BlockGen) {
		b.SetCoinbase(opstack.SequencerFeeVault)
		b.OffsetTime(int64(time) - int64(b.Timestamp()))
		var minBaseFee *uint64
		if g.config.IsJovian(time) {
			minBaseFee = new(uint64)
		}
		b.SetExtra(eip1559.EncodeOptimismExtraData(g.config, time, g.config.BaseFeeChangeDenominator(time), g.config.ElasticityMultiplier(), minBaseFee))
		b.SetParentBeaconRoot(crypto.Keccak256Hash([]byte("beacon"), parent.Number().Bytes()))
		for _, tx := range txs {
			b.AddTx(tx)
		}
	})
	return blocks[0], receipts[0]
}

// deposits are block i's deposits: the L1-attributes deposit, a user
// deposit minting 1 ETH and sending a quarter of it on, and in every other
// block a deposit that runs out of gas (its mint stays, its call fails).
func (g *generator) deposits(info *opstack.L1Info, parent *types.Block, i int) (types.Transactions, error) {
	l1tx, err := info.Deposit(g.config, parent.Time()+g.cfg.BlockTime, parent.Time())
	if err != nil {
		return nil, err
	}
	eth := big.NewInt(1e18)
	from := common.BigToAddress(big.NewInt(int64(0xa11ce0 + i)))
	to := common.BigToAddress(big.NewInt(int64(0xb0b0 + i%3)))
	txs := types.Transactions{l1tx, types.NewTx(&types.DepositTx{
		SourceHash: opstack.UserDepositSourceHash(info.Hash, uint64(2*i)), From: from, To: &to,
		Mint: eth, Value: new(big.Int).Div(eth, big.NewInt(4)), Gas: 100_000,
	})}
	if i%2 == 1 {
		store := Store
		txs = append(txs, types.NewTx(&types.DepositTx{
			SourceHash: opstack.UserDepositSourceHash(info.Hash, uint64(2*i+1)), From: from, To: &store,
			Mint: big.NewInt(1000), Value: big.NewInt(10), Gas: 25_000, // the SSTORE runs out of gas
			Data: append(common.BigToHash(big.NewInt(7)).Bytes(), common.BigToHash(big.NewInt(int64(i))).Bytes()...),
		}))
	}
	return txs, nil
}

// userTxs are block i's user transactions, round robin over the keys.
func (g *generator) userTxs(i int) types.Transactions {
	signer := types.LatestSigner(g.config)
	var txs types.Transactions
	for k := range g.cfg.TxsPerBlock {
		n := i*g.cfg.TxsPerBlock + k
		who := n % len(g.cfg.Keys)
		inner := &types.DynamicFeeTx{
			ChainID: g.config.ChainID, Nonce: g.nonces[who], GasTipCap: big.NewInt(1_000_000), GasFeeCap: big.NewInt(10_000_000_000),
		}
		switch {
		case i == 0 && k == 0: // a contract creation: deploy a copy of Store's code
			initCode := append([]byte{0x60, byte(len(storeCode)), 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, byte(len(storeCode)), 0x60, 0x00, 0xf3}, storeCode...)
			inner.Gas, inner.Data = 100_000, initCode
		case n%5 == 4: // a withdrawal to L1: the message passer's storage (and the withdrawals root) moves
			data := append(append(append(append([]byte{}, withdrawalSig...), common.LeftPadBytes(common.Address{0xee}.Bytes(), 32)...),
				common.BigToHash(big.NewInt(100_000)).Bytes()...), common.BigToHash(big.NewInt(96)).Bytes()...)
			data = append(data, common.BigToHash(big.NewInt(0)).Bytes()...)
			to := params.OptimismL2ToL1MessagePasser
			inner.To, inner.Gas, inner.Value, inner.Data = &to, 200_000, big.NewInt(10_000_000_000_000_000), data
		case n%2 == 1: // a storage write with a log
			to := Store
			inner.To, inner.Gas = &to, 60_000
			inner.Data = append(common.BigToHash(big.NewInt(int64(n%8))).Bytes(), common.BigToHash(big.NewInt(int64(n+1))).Bytes()...)
		default: // a transfer carrying calldata of varying size (the L1 fee follows it)
			to := common.BigToAddress(big.NewInt(int64(0x100000 + n%16)))
			inner.To, inner.Gas, inner.Value = &to, 30_000+uint64(2000*(n%4)), big.NewInt(int64(1000+n))
			inner.Data = bytes.Repeat([]byte{byte(n), 0x01, 0x02, 0x03}, 10*(n%4))
		}
		txs = append(txs, types.MustSignNewTx(g.cfg.Keys[who], signer, inner))
		g.nonces[who]++
	}
	return txs
}

// DevL2 generates blocks on the built-in dev chain at Isthmus,
// chain.DevL2GenesisAt (changed by mutate, when given), with the first three
// dev keys: the chain the recorded flashblocks (flashblock/testdata), the
// follow tests and the op-geth differential test share. It stays at Isthmus,
// the fork of the recordings; Jovian and Karst chains come from Generate.
func DevL2(blocks int, mutate func(*core.Genesis)) (*Chain, error) {
	g, err := chain.DevL2GenesisAt(forkrules.Isthmus)
	if err != nil {
		return nil, err
	}
	if mutate != nil {
		mutate(g)
	}
	var keys []*ecdsa.PrivateKey
	for _, k := range chain.DevKeys[:3] {
		key, err := crypto.HexToECDSA(k)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return Generate(Config{Genesis: g, Keys: keys, Blocks: blocks})
}
