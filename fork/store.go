package fork

import (
	"encoding/binary"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/rlp"
)

// The forked state on disk, beside go-ethereum's block schema (rawdb) in the
// same key-value store. Prefixes start with "pf", which rawdb does not use.
//
//	pfA addr                → the account at the fork block (verified)
//	pfS addr slot           → a slot at the fork block (verified)
//	pfa addr ^number        → the account as block number left it
//	pfs addr slot ^number   → the slot as block number left it
//	pfw addr ^number        → block number wiped the account's storage
//	pfr root                → the first block number with that state root
//	pfm                     → the fork's identity (meta.go)
//
// Code, fetched or deployed, is content-addressed in rawdb's code table.
// Keys of a local block carry ^number (bitwise not, big-endian) so that an
// iterator seeking from ^v meets the newest entry at or below block v first.
var (
	baseAccountPrefix = []byte("pfA")
	baseSlotPrefix    = []byte("pfS")
	accountPrefix     = []byte("pfa")
	slotPrefix        = []byte("pfs")
	wipePrefix        = []byte("pfw")
	rootPrefix        = []byte("pfr")
	metaKey           = []byte("pfm")
)

func key(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func inverted(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ^n)
	return b[:]
}

// Accounts are stored as a tag byte (0: no account, 1: RLP follows).
func encodeAccount(a *types.StateAccount) []byte {
	if a == nil {
		return []byte{0}
	}
	enc, err := rlp.EncodeToBytes(a)
	if err != nil {
		panic(err) // a StateAccount always encodes
	}
	return append([]byte{1}, enc...)
}

func decodeAccount(v []byte) (*types.StateAccount, error) {
	if len(v) == 0 || v[0] == 0 {
		return nil, nil
	}
	a := new(types.StateAccount)
	if err := rlp.DecodeBytes(v[1:], a); err != nil {
		return nil, err
	}
	return a, nil
}

// baseStore keeps the verified values of the fork block's state: the
// remote.Store of the fork's upstream state, so nothing is fetched twice.
type baseStore struct{ db ethdb.KeyValueStore }

func (s baseStore) Account(addr common.Address) (*types.StateAccount, bool) {
	v, err := s.db.Get(key(baseAccountPrefix, addr[:]))
	if err != nil || len(v) == 0 {
		return nil, false
	}
	a, err := decodeAccount(v)
	if err != nil {
		return nil, false // unreadable: fetched again
	}
	return a, true
}

func (s baseStore) Storage(addr common.Address, slot common.Hash) (common.Hash, bool) {
	v, err := s.db.Get(key(baseSlotPrefix, addr[:], slot[:]))
	if err != nil || len(v) != common.HashLength {
		return common.Hash{}, false
	}
	return common.BytesToHash(v), true
}

func (s baseStore) Code(h common.Hash) []byte { return rawdb.ReadCode(s.db, h) }

// Writes are not synced: one lost in a machine crash is fetched again.

func (s baseStore) PutAccount(addr common.Address, a *types.StateAccount) {
	s.db.Put(key(baseAccountPrefix, addr[:]), encodeAccount(a))
}

func (s baseStore) PutStorage(addr common.Address, slot, value common.Hash) {
	s.db.Put(key(baseSlotPrefix, addr[:], slot[:]), value[:])
}

func (s baseStore) PutCode(h common.Hash, code []byte) { rawdb.WriteCode(s.db, h, code) }

// touched is the set of addresses that local blocks changed (accounts) or
// whose storage they changed or wiped: a read of anything else goes
// straight to the fork block's state without looking at local history.
type touched struct {
	accounts sync.Map // common.Address → struct{}
	storage  sync.Map // common.Address → struct{}
}

func (t *touched) account(a common.Address) bool { _, ok := t.accounts.Load(a); return ok }
func (t *touched) slots(a common.Address) bool   { _, ok := t.storage.Load(a); return ok }

// load fills the sets from the history on disk (at open).
func (t *touched) load(db ethdb.Iteratee) error {
	for _, p := range []struct {
		prefix []byte
		set    *sync.Map
	}{{accountPrefix, &t.accounts}, {slotPrefix, &t.storage}, {wipePrefix, &t.storage}} {
		it := db.NewIterator(p.prefix, nil)
		for it.Next() {
			k := it.Key()
			if len(k) >= len(p.prefix)+common.AddressLength {
				p.set.Store(common.BytesToAddress(k[len(p.prefix):len(p.prefix)+common.AddressLength]), struct{}{})
			}
		}
		err := it.Error()
		it.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// newest returns the value of the newest entry under prefix at or below
// block v, and that block's number.
func newest(db ethdb.Iteratee, prefix []byte, v uint64) (value []byte, number uint64, ok bool) {
	it := db.NewIterator(prefix, inverted(v))
	defer it.Release()
	if !it.Next() {
		return nil, 0, false
	}
	k := it.Key()
	if len(k) != len(prefix)+8 {
		return nil, 0, false
	}
	return common.CopyBytes(it.Value()), ^binary.BigEndian.Uint64(k[len(prefix):]), true
}
