package fork

import (
	"bytes"
	"errors"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/state/snapshot"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
)

// A forked chain holds the fork block's state only as far as it was read,
// so it cannot compute Merkle roots: deleting a key may need trie nodes no
// RPC method serves. Its state roots are commitments instead. The fork
// block's root is the upstream's; a local block's root is
//
//	keccak256("preconf fork state" ‖ parent root ‖ for each changed account,
//	          in address order: address ‖ 0 (deleted) | 1 ‖ RLP(account))
//
// where a changed account's storage root is, unless its storage did not
// change (then it stays), EmptyRootHash for a new account whose slots are
// all zero, and otherwise
//
//	keccak256("preconf fork storage" ‖ previous storage root ‖ for each
//	          written slot, in slot order: slot ‖ value)
//
// so a root names exactly one state (its block and every block before it),
// the same on every replay. go-ethereum's StateDB computes it unchanged:
// hasher is the state.Trie it is handed (recording what StateDB writes) and
// stateDatabase the state.Database that hands it out.

var (
	stateTag   = []byte("preconf fork state")
	storageTag = []byte("preconf fork storage")

	// errNoTrie answers what needs trie nodes (proofs, iteration).
	errNoTrie = errors.New("a fork keeps no trie nodes: no proofs of its state (ask the upstream for blocks up to the fork block)")
	// errNoCommit: local blocks are written by Chain.InsertSealed.
	errNoCommit = errors.New("forked state is committed by fork.Chain.InsertSealed, not StateDB.Commit")
)

// hasher records StateDB's writes to one account trie (owner zero) or one
// account's storage trie, and hashes them into the commitment above.
type hasher struct {
	root    common.Hash    // the root it was opened at
	owner   common.Address // storage: the account
	storage bool

	mu       sync.Mutex
	accounts map[common.Address]*types.StateAccount // nil value: deleted
	codes    map[common.Hash][]byte
	slots    map[common.Hash]common.Hash
	tries    map[common.Address]*hasher // storage tries opened against this one
}

func newAccountHasher(root common.Hash) *hasher {
	return &hasher{
		root:     root,
		accounts: make(map[common.Address]*types.StateAccount),
		codes:    make(map[common.Hash][]byte),
		tries:    make(map[common.Address]*hasher),
	}
}

func newStorageHasher(owner common.Address, root common.Hash) *hasher {
	return &hasher{root: root, owner: owner, storage: true, slots: make(map[common.Hash]common.Hash)}
}

// GetKey implements state.Trie (no preimages are kept).
func (h *hasher) GetKey([]byte) []byte { return nil }

// GetAccount implements state.Trie for what was written here; StateDB reads
// through its state.Reader.
func (h *hasher) GetAccount(addr common.Address) (*types.StateAccount, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.accounts[addr]; ok && a != nil {
		return a.Copy(), nil
	}
	return nil, nil
}

// GetStorage implements state.Trie for what was written here.
func (h *hasher) GetStorage(_ common.Address, key []byte) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.slots[common.BytesToHash(key)]
	return common.TrimLeftZeroes(v[:]), nil
}

func (h *hasher) PrefetchAccount([]common.Address) error                  { return nil }
func (h *hasher) PrefetchStorage(common.Address, [][]byte) error          { return nil }
func (h *hasher) Witness() map[string][]byte                              { return nil }
func (h *hasher) IsVerkle() bool                                          { return false }
func (h *hasher) Prove([]byte, ethdb.KeyValueWriter) error                { return errNoTrie }
func (h *hasher) NodeIterator(startKey []byte) (trie.NodeIterator, error) { return nil, errNoTrie }

// UpdateAccount implements state.Trie.
func (h *hasher) UpdateAccount(addr common.Address, acct *types.StateAccount, _ int) error {
	h.mu.Lock()
	h.accounts[addr] = acct.Copy()
	h.mu.Unlock()
	return nil
}

// DeleteAccount implements state.Trie.
func (h *hasher) DeleteAccount(addr common.Address) error {
	h.mu.Lock()
	h.accounts[addr] = nil
	h.mu.Unlock()
	return nil
}

// UpdateStorage implements state.Trie.
func (h *hasher) UpdateStorage(_ common.Address, key, value []byte) error {
	h.mu.Lock()
	h.slots[common.BytesToHash(key)] = common.BytesToHash(value)
	h.mu.Unlock()
	return nil
}

// DeleteStorage implements state.Trie: the slot is now zero.
func (h *hasher) DeleteStorage(_ common.Address, key []byte) error {
	h.mu.Lock()
	h.slots[common.BytesToHash(key)] = common.Hash{}
	h.mu.Unlock()
	return nil
}

// UpdateContractCode implements state.Trie.
func (h *hasher) UpdateContractCode(_ common.Address, codeHash common.Hash, code []byte) error {
	h.mu.Lock()
	h.codes[codeHash] = code
	h.mu.Unlock()
	return nil
}

// Hash implements state.Trie: the commitment described above.
func (h *hasher) Hash() common.Hash {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.storage {
		return h.storageHash()
	}
	if len(h.accounts) == 0 {
		return h.root
	}
	addrs := make([]common.Address, 0, len(h.accounts))
	for a := range h.accounts {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b common.Address) int { return bytes.Compare(a[:], b[:]) })
	kh := crypto.NewKeccakState()
	kh.Write(stateTag)
	kh.Write(h.root[:])
	for _, a := range addrs {
		kh.Write(a[:])
		kh.Write(encodeAccount(h.accounts[a]))
	}
	var out common.Hash
	kh.Read(out[:])
	return out
}

func (h *hasher) storageHash() common.Hash {
	if len(h.slots) == 0 {
		return h.root
	}
	keys := make([]common.Hash, 0, len(h.slots))
	empty := h.root == types.EmptyRootHash
	for k, v := range h.slots {
		keys = append(keys, k)
		if v != (common.Hash{}) {
			empty = false
		}
	}
	if empty {
		return types.EmptyRootHash
	}
	slices.SortFunc(keys, func(a, b common.Hash) int { return bytes.Compare(a[:], b[:]) })
	kh := crypto.NewKeccakState()
	kh.Write(storageTag)
	kh.Write(h.root[:])
	for _, k := range keys {
		v := h.slots[k]
		kh.Write(k[:])
		kh.Write(v[:])
	}
	var out common.Hash
	kh.Read(out[:])
	return out
}

// Commit implements state.Trie; there are no nodes to collect.
func (h *hasher) Commit(bool) (common.Hash, *trienode.NodeSet) { return h.Hash(), nil }

// addStorage links a storage trie opened against this account trie, so
// that InsertSealed finds every account's written slots.
func (h *hasher) addStorage(addr common.Address, st *hasher) {
	h.mu.Lock()
	h.tries[addr] = st
	h.mu.Unlock()
}

// changes is what the StateDB wrote: accounts (nil: deleted), the storage
// tries of the accounts (with the root each was opened at), and new code.
type changes struct {
	accounts map[common.Address]*types.StateAccount
	storage  map[common.Address]*hasher
	codes    map[common.Hash][]byte
}

func (h *hasher) changes() changes {
	h.mu.Lock()
	defer h.mu.Unlock()
	return changes{accounts: h.accounts, storage: h.tries, codes: h.codes}
}

func (h *hasher) written() map[common.Hash]common.Hash {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.slots
}

// stateDatabase is the state.Database of a forked chain: readers of its
// history over the fork block's state, hashers instead of tries.
type stateDatabase struct {
	c      *Chain
	triedb *triedb.Database // empty: StateDB asks it only what scheme it is
}

func newStateDatabase(c *Chain) *stateDatabase {
	return &stateDatabase{c: c, triedb: triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil)}
}

// Reader implements state.Database.
func (d *stateDatabase) Reader(root common.Hash) (state.Reader, error) { return d.c.StateReader(root) }

// OpenTrie implements state.Database.
func (d *stateDatabase) OpenTrie(root common.Hash) (state.Trie, error) {
	return newAccountHasher(root), nil
}

// OpenStorageTrie implements state.Database.
func (d *stateDatabase) OpenStorageTrie(_ common.Hash, addr common.Address, root common.Hash, self state.Trie) (state.Trie, error) {
	st := newStorageHasher(addr, root)
	if h, ok := self.(*hasher); ok {
		h.addStorage(addr, st)
	}
	return st, nil
}

// TrieDB implements state.Database.
func (d *stateDatabase) TrieDB() *triedb.Database { return d.triedb }

// Snapshot implements state.Database.
func (d *stateDatabase) Snapshot() *snapshot.Tree { return nil }

// Commit implements state.Database.
func (d *stateDatabase) Commit(*state.StateUpdate) error { return errNoCommit }

var (
	_ state.Trie     = (*hasher)(nil)
	_ state.Database = (*stateDatabase)(nil)
)
