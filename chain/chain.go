// Package chain owns the node's sealed chain: the Pebble store (through
// go-ethereum's rawdb), the genesis, block import, the canonical head with its
// safe and finalized markers, and state at any stored block (archive).
package chain

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/state/snapshot"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/pebblestore"
)

// Config says where the chain lives and what it starts from.
type Config struct {
	// Dir is the database directory; empty keeps everything in memory (tests).
	Dir string
	// Genesis is the chain's genesis. Nil means: whatever the database holds,
	// or the built-in OP-stack dev genesis (DevL2Genesis) for a new database.
	// A database holding the built-in plain-Ethereum dev chain (DevGenesis,
	// the default before) must name it: it is refused otherwise.
	Genesis *core.Genesis
	// CacheMB is Pebble's cache size.
	CacheMB int
	Logger  *slog.Logger
}

// Chain is the sealed chain. Its read methods are safe for concurrent use.
type Chain struct {
	db     ethdb.Database
	bc     *core.BlockChain
	sdb    state.Database // shared, concurrency-safe: readers and StateDBs
	config *params.ChainConfig
	log    *slog.Logger
	// memory: the store is in memory (no datadir); sealed state stays in
	// the trie database's dirty cache (Flush).
	memory bool
}

// ErrGenesisMismatch reports a datadir initialised with another genesis.
var ErrGenesisMismatch = errors.New("datadir holds a different genesis")

// Open opens (or initialises) the chain at cfg.Dir.
func Open(cfg Config) (*Chain, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Dir == "" {
		db := rawdb.NewMemoryDatabase()
		return open(db, cfg.Genesis, logger, true)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create datadir: %w", err)
	}
	cache := cfg.CacheMB
	if cache <= 0 {
		cache = 256
	}
	// No freezer: the chain stays in the key-value store so every block and
	// its state remain readable (archive); pruning is a later concern. The
	// store's Close waits for go-ethereum's background iterators (pebblestore).
	db, err := pebblestore.Open(filepath.Join(cfg.Dir, "chaindata"), cache, "preconf/db/")
	if err != nil {
		return nil, fmt.Errorf("open pebble at %s: %w", cfg.Dir, err)
	}
	c, err := open(db, cfg.Genesis, logger, false)
	if err != nil {
		db.Close()
		return nil, err
	}
	return c, nil
}

// open opens the chain over db; memory says db is in memory (no datadir).
func open(db ethdb.Database, genesis *core.Genesis, logger *slog.Logger, memory bool) (*Chain, error) {
	stored := rawdb.ReadCanonicalHash(db, 0)
	switch {
	case genesis == nil && stored == (common.Hash{}):
		g, err := DevL2Genesis()
		if err != nil {
			return nil, err
		}
		genesis = g
	case genesis == nil && stored == DevGenesis().ToBlock().Hash():
		return nil, fmt.Errorf("%w: this datadir holds the plain-Ethereum dev chain, the default before the OP-stack dev chain: start with --l1 to use it, or use another --datadir", ErrGenesisMismatch)
	case genesis != nil && stored != (common.Hash{}):
		if want := genesis.ToBlock().Hash(); want != stored {
			if f, ok := DevL2HardforkOf(stored); ok && f == DevL2Hardfork {
				return nil, fmt.Errorf("%w: this datadir holds the OP-stack dev chain (the default): start without --l1 or --genesis, or use another --datadir", ErrGenesisMismatch)
			} else if ok {
				return nil, fmt.Errorf("%w: this datadir holds the OP-stack dev chain at %s: start with --hardfork %s (without --l1 or --genesis), or use another --datadir", ErrGenesisMismatch, f, strings.ToLower(f.String()))
			}
			return nil, fmt.Errorf("%w: stored genesis %s, the requested chain's is %s (use another --datadir)", ErrGenesisMismatch, stored, want)
		}
	}
	forgetSnapshotOfStatelessHead(db, logger)
	bcfg := core.DefaultConfig()
	bcfg.StateScheme = rawdb.HashScheme
	bcfg.ArchiveMode = true // every block's state is committed: reads at any height
	bcfg.TxLookupLimit = 0  // index every transaction
	// After a crash the state snapshot has no journal and is generated
	// again from the trie. As geth's own node does, that runs in the
	// background: reads meanwhile fall back to the trie (state readers try
	// the snapshot, then the trie), so the node serves at once. Waiting for
	// it, a kill -9 on the million-account bench store (go run ./bench
	// -bigstate) delayed the restart's first answer 25.2 s, against 0.08 s
	// after a clean stop.
	bcfg.SnapshotWait = false
	if memory {
		// In memory the state snapshot (a flat copy of the state for fast
		// reads) costs a test chain more than it saves: every sealed block
		// adds a diff layer, which copies its parent's bloom filter (~100
		// KB, sized by a constant of go-ethereum's: no setting avoids the
		// copy but this one). Without it, and without Flush's trie commit
		// (write.go), sealing an automine block took 0.89-1.15 ms of CPU
		// instead of 1.51-1.67 ms, 157 KB allocated instead of 395 KB. The
		// price is on reads, which walk the trie instead of the flat
		// layers: an eth_call's state reads at the head took 45-60 µs
		// instead of 18-31 µs, 281 allocations instead of 114 (go test
		// ./chain -run XXX -bench 'SealBlock/memory|ReadAfterSeals', runs
		// alternating on a loaded machine). A suite writes as often as it
		// reads, and a write's seal is its largest cost.
		bcfg.SnapshotLimit = 0
	}
	bcfg.Preimages = true // trie keys' preimages: anvil_dumpState lists accounts and slots by address and key
	// Imported blocks are executed by op-geth's processor: on Karst, with
	// Karst's precompiles (its config is normalized: forkrules.Normalize).
	bcfg.VmConfig.PrecompileOverrides = forkrules.PrecompileOverride
	// Pre-merge blocks of imported chains carry PoW seals we do not verify
	// (the same trust as `geth import` of a known file); PoS blocks are fully
	// verified by the beacon engine.
	engine := beacon.New(ethash.NewFaker())
	bc, err := core.NewBlockChain(db, genesis, engine, bcfg)
	if err != nil {
		var mm *core.GenesisMismatchError
		if errors.As(err, &mm) {
			return nil, fmt.Errorf("%w: %v", ErrGenesisMismatch, err)
		}
		return nil, fmt.Errorf("open chain: %w", err)
	}
	sdb := state.NewDatabase(bc.TrieDB(), bc.CodeDB()).WithSnapshot(bc.Snapshots())
	return &Chain{db: db, bc: bc, sdb: sdb, config: bc.Config(), log: logger, memory: memory}, nil
}

// Close flushes and closes the store.
func (c *Chain) Close() error {
	c.bc.Stop()
	return c.db.Close()
}

// Config is the chain configuration (forks, chain id).
func (c *Chain) Config() *params.ChainConfig { return c.config }

// BlockChain exposes go-ethereum's chain for its event feeds and receipt
// lookups; readers should prefer the narrower methods below, and nothing
// writes through it (see InsertSealed).
func (c *Chain) BlockChain() *core.BlockChain { return c.bc }

// ChainContext serves canonical headers to the EVM (BLOCKHASH).
func (c *Chain) ChainContext() core.ChainContext { return c.bc }

// Genesis is block 0.
func (c *Chain) Genesis() *types.Block { return c.bc.Genesis() }

// Head is the newest sealed block's header.
func (c *Chain) Head() *types.Header { return c.bc.CurrentBlock() }

// Safe is the safe block's header: the one marked (SetSafe, Import), or
// genesis while none is. A chain's first block is settled by definition, and
// "safe" is then never an error (anvil answers it from block 0 too).
func (c *Chain) Safe() *types.Header {
	if h := c.bc.CurrentSafeBlock(); h != nil {
		return h
	}
	return c.bc.Genesis().Header()
}

// Finalized is the finalized block's header: the one marked (SetFinalized,
// Import), or genesis while none is.
func (c *Chain) Finalized() *types.Header {
	if h := c.bc.CurrentFinalBlock(); h != nil {
		return h
	}
	return c.bc.Genesis().Header()
}

// SetSafe marks h safe; SetFinalized marks it finalized (persisted).
func (c *Chain) SetSafe(h *types.Header)      { c.bc.SetSafe(h) }
func (c *Chain) SetFinalized(h *types.Header) { c.bc.SetFinalized(h) }

// HeaderByNumber returns the canonical header at n, or nil.
func (c *Chain) HeaderByNumber(n uint64) *types.Header { return c.bc.GetHeaderByNumber(n) }

// HeaderByHash returns the header with hash h (canonical or not), or nil.
func (c *Chain) HeaderByHash(h common.Hash) *types.Header { return c.bc.GetHeaderByHash(h) }

// BlockByNumber returns the canonical block at n, or nil.
func (c *Chain) BlockByNumber(n uint64) *types.Block { return c.bc.GetBlockByNumber(n) }

// BlockByHash returns the block with hash h, or nil.
func (c *Chain) BlockByHash(h common.Hash) *types.Block { return c.bc.GetBlockByHash(h) }

// IsCanonical reports whether h is the canonical header at its height.
func (c *Chain) IsCanonical(h *types.Header) bool {
	return c.bc.GetCanonicalHash(h.Number.Uint64()) == h.Hash()
}

// Receipts returns the block's receipts with all derived fields filled.
func (c *Chain) Receipts(b *types.Block) types.Receipts {
	return c.bc.GetReceiptsByHash(b.Hash())
}

// TxLookup finds a canonical transaction by hash: the transaction, its block
// hash, number and index. ok is false when it is unknown.
func (c *Chain) TxLookup(hash common.Hash) (tx *types.Transaction, blockHash common.Hash, number, index uint64, ok bool) {
	num := rawdb.ReadTxLookupEntry(c.db, hash)
	// go-ethereum's SetCanonical writes the lookup entries before it moves
	// the head: a block above the head is not sealed yet for readers, who
	// must never see a transaction in a block that "latest" does not reach.
	if num == nil || *num > c.Head().Number.Uint64() {
		return nil, common.Hash{}, 0, 0, false
	}
	b := c.bc.GetBlockByNumber(*num)
	if b == nil {
		return nil, common.Hash{}, 0, 0, false
	}
	for i, t := range b.Transactions() {
		if t.Hash() == hash {
			return t, b.Hash(), *num, uint64(i), true
		}
	}
	return nil, common.Hash{}, 0, 0, false
}

// StateAt opens a fresh (not concurrency-safe) StateDB at the header's root.
func (c *Chain) StateAt(h *types.Header) (*state.StateDB, error) {
	return state.New(h.Root, c.sdb)
}

// StateDatabase is the shared state database (for StateDBs over custom readers).
func (c *Chain) StateDatabase() state.Database { return c.sdb }

// StateReader returns a concurrency-safe reader of the state at root.
func (c *Chain) StateReader(root common.Hash) (state.Reader, error) {
	return c.sdb.Reader(root)
}

// SnapshotGenerating reports whether the state snapshot is being generated
// (after a crash, or a rewind past its layers). Meanwhile reads are
// answered from the trie: right, but slower. On the million-account bench
// store after kill -9 (wrk, 32 connections, random-key eth_getBalance):
// 2,100 and 5,700 reads/s at 0–5 s and 26–31 s after the restart, 47,000
// at 61–66 s, the generation done.
func (c *Chain) SnapshotGenerating() bool {
	snaps := c.bc.Snapshots()
	if snaps == nil {
		return false
	}
	// The iterator is refused exactly while the disk layer has a
	// generation marker.
	it, err := snaps.AccountIterator(snaps.DiskRoot(), common.Hash{})
	if err != nil {
		return errors.Is(err, snapshot.ErrNotConstructed)
	}
	it.Release()
	return false
}
