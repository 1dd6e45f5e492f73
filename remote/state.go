package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// Proofs says how account and storage reads are checked.
type Proofs int32

const (
	// ProofsAuto uses eth_getProof and falls back to plain reads when the
	// upstream does not offer it, asking again after ReprobeAfter (an
	// upstream can be upgraded, or be a pool of different clients).
	ProofsAuto Proofs = iota
	// ProofsRequired uses eth_getProof only (an upstream without it fails).
	ProofsRequired
	// ProofsOff uses plain reads (eth_getBalance, eth_getTransactionCount,
	// eth_getCode, eth_getStorageAt), trusting the upstream.
	ProofsOff
)

// Shared is what every State of one upstream shares: the client, the proof
// mode, the content-addressed code cache and counters.
type Shared struct {
	Client  *Client
	Timeout time.Duration // one read (0: 10 s)

	// CodeWithAccount fetches a contract's code in the same exchange as its
	// account proof (one round trip where the EVM would need two).
	CodeWithAccount bool

	mode     atomic.Int32 // Proofs, as configured
	offUntil atomic.Int64 // auto mode: plain reads until then (unix ns), after a -32601
	codes    sync.Map     // common.Hash → *entry[[]byte]
	codeN    atomic.Int64
	Fetches  atomic.Uint64 // values fetched from the upstream
	Hits     atomic.Uint64 // values served from a cache in memory
	Stored   atomic.Uint64 // values served from a State's Store
	Verified atomic.Uint64 // proofs verified
}

// NewShared returns the shared part for an upstream client.
func NewShared(c *Client, mode Proofs) *Shared {
	s := &Shared{Client: c, Timeout: 10 * time.Second}
	s.mode.Store(int32(mode))
	return s
}

// ReprobeAfter is how long auto mode reads without proofs after the
// upstream answered eth_getProof with -32601, before asking again (a
// variable for tests).
var ReprobeAfter = time.Minute

// Mode is the configured proof mode.
func (s *Shared) Mode() Proofs { return Proofs(s.mode.Load()) }

// ProofsNow reports whether new reads are checked with proofs: always in
// required mode, never when off, and in auto mode unless the upstream
// lately answered that it has no eth_getProof.
func (s *Shared) ProofsNow() bool {
	switch s.Mode() {
	case ProofsOff:
		return false
	case ProofsRequired:
		return true
	}
	return time.Now().UnixNano() >= s.offUntil.Load()
}

// maxEntries bounds the accounts (and, separately, the slots) one State
// keeps; past it reads are answered without being kept.
const maxEntries = 1 << 18

// maxCodes bounds the code cache (entries); past it the cache is emptied.
const maxCodes = 1 << 14

type entry[T any] struct {
	done chan struct{}
	v    T
	err  error
}

func newEntry[T any]() *entry[T] { return &entry[T]{done: make(chan struct{})} }

type slotKey struct {
	addr common.Address
	slot common.Hash
}

// State reads the state after one sealed block from the upstream, lazily:
// each account, slot and code is fetched once (concurrent readers of the same
// key share one request) and kept for the State's lifetime. With proofs, every
// value is verified against the block's state root, so a lying upstream is
// detected. Safe for concurrent use; implements state.Reader.
type State struct {
	sh     *Shared
	number uint64
	hash   common.Hash
	root   common.Hash
	ref    map[string]any // EIP-1898 block selector
	store  Store          // nil: memory only

	codeErr atomic.Pointer[error] // last failed code read (Code cannot return errors)
	// proofs is fixed when the State is made and only turns off (auto mode,
	// -32601): within one State, accounts read without proofs have no
	// known storage root, so proofs cannot come back for them.
	proofs atomic.Bool

	mu    sync.Mutex
	accts map[common.Address]*entry[*types.StateAccount]
	slots map[slotKey]*entry[common.Hash]
	// hints are accounts as they probably are here, never answered as
	// values: a Recorder's provisional answers (Hint).
	hints map[common.Address]*types.StateAccount
}

// NewState is the state after the sealed block h.
func (sh *Shared) NewState(h *types.Header) *State { return sh.NewStateWith(h, nil) }

// NewStateWith is the state after the sealed block h whose values are kept
// in store as well: a value store has is never asked of the upstream, and
// every value fetched (verified) is put there.
func (sh *Shared) NewStateWith(h *types.Header, store Store) *State {
	hash := h.Hash()
	st := &State{
		sh: sh, number: h.Number.Uint64(), hash: hash, root: h.Root,
		ref:   map[string]any{"blockHash": hash},
		store: store,
		accts: make(map[common.Address]*entry[*types.StateAccount]),
		slots: make(map[slotKey]*entry[common.Hash]),
	}
	st.proofs.Store(sh.ProofsNow())
	return st
}

// Root is the state root the reads are verified against.
func (s *State) Root() common.Hash { return s.root }

// BlockHash is the block whose state this is.
func (s *State) BlockHash() common.Hash { return s.hash }

func (s *State) ctx() (context.Context, context.CancelFunc) {
	t := s.sh.Timeout
	if t <= 0 {
		t = 10 * time.Second
	}
	return context.WithTimeout(context.Background(), t)
}

// useProofs reports whether this State's reads are checked with proofs.
func (s *State) useProofs() bool { return s.proofs.Load() }

// proofUnavailable reports whether err means "no eth_getProof here" and
// auto mode may fall back to plain reads (in required mode it may not: the
// error stands). Falling back also pauses proofs for new States for
// ReprobeAfter.
func (s *State) proofUnavailable(err error) bool {
	if !IsMethodNotFound(err) || s.sh.Mode() != ProofsAuto {
		return false
	}
	s.proofs.Store(false)
	s.sh.offUntil.Store(time.Now().Add(ReprobeAfter).UnixNano())
	return true
}

// Account implements state.Reader. The returned account is a copy.
func (s *State) Account(addr common.Address) (*types.StateAccount, error) {
	s.mu.Lock()
	e, ok := s.accts[addr]
	if ok {
		s.mu.Unlock()
		<-e.done
		s.sh.Hits.Add(1)
		return copyAccount(e.v), e.err
	}
	if len(s.accts) >= maxEntries { // full: answer without keeping it
		s.mu.Unlock()
		return s.loadAccount(addr)
	}
	e = newEntry[*types.StateAccount]()
	s.accts[addr] = e
	s.mu.Unlock()
	v, err := s.loadAccount(addr)
	s.finishAccount(addr, e, v, err)
	return copyAccount(v), err
}

// loadAccount reads an account from the store, or else the upstream.
func (s *State) loadAccount(addr common.Address) (*types.StateAccount, error) {
	if s.store != nil {
		if v, ok := s.store.Account(addr); ok {
			s.sh.Stored.Add(1)
			return v, nil
		}
	}
	s.sh.Fetches.Add(1)
	v, err := s.fetchAccount(addr)
	if err == nil && s.store != nil {
		s.store.PutAccount(addr, v)
	}
	return v, err
}

func copyAccount(a *types.StateAccount) *types.StateAccount {
	if a == nil {
		return nil
	}
	return a.Copy()
}

func (s *State) finishAccount(addr common.Address, e *entry[*types.StateAccount], v *types.StateAccount, err error) {
	e.v, e.err = v, err
	if err != nil { // not cached: a later read retries
		s.mu.Lock()
		if s.accts[addr] == e {
			delete(s.accts, addr)
		}
		s.mu.Unlock()
	}
	close(e.done)
}

func (s *State) fetchAccount(addr common.Address) (*types.StateAccount, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if s.useProofs() {
		if s.sh.CodeWithAccount {
			return s.fetchAccountAndCode(ctx, addr)
		}
		var res proofResult
		err := s.sh.Client.Call(ctx, &res, "eth_getProof", addr, []string{}, s.ref)
		if err == nil {
			s.sh.Verified.Add(1)
			return verifyAccount(s.root, addr, &res)
		}
		if !s.proofUnavailable(err) {
			return nil, s.wrap("account", addr, err)
		}
	}
	reqs := plainAccountRequests(addr, s.ref)
	if err := s.sh.Client.Batch(ctx, reqs); err != nil {
		return nil, s.wrap("account", addr, err)
	}
	return s.plainAccount(reqs)
}

func (s *State) wrap(what string, addr common.Address, err error) error {
	if errors.Is(err, ErrLying) || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("upstream %s of %s at block %d: %w", what, addr, s.number, err)
}

func plainAccountRequests(addr common.Address, ref any) []*Request {
	return []*Request{
		{Method: "eth_getBalance", Params: []any{addr, ref}, Result: new(hexutil.Big)},
		{Method: "eth_getTransactionCount", Params: []any{addr, ref}, Result: new(hexutil.Uint64)},
		{Method: "eth_getCode", Params: []any{addr, ref}, Result: new(hexutil.Bytes)},
	}
}

// plainAccount assembles an unverified account from its three reads. The
// storage root is unknown without proofs: storage is then always asked for.
func (s *State) plainAccount(reqs []*Request) (*types.StateAccount, error) {
	for _, r := range reqs {
		if r.Err != nil {
			return nil, r.Err
		}
	}
	bal, overflow := uint256.FromBig(reqs[0].Result.(*hexutil.Big).ToInt())
	if overflow {
		return nil, fmt.Errorf("%w: balance out of range", ErrLying)
	}
	nonce := uint64(*reqs[1].Result.(*hexutil.Uint64))
	code := []byte(*reqs[2].Result.(*hexutil.Bytes))
	if bal.IsZero() && nonce == 0 && len(code) == 0 {
		return nil, nil
	}
	hash := types.EmptyCodeHash
	if len(code) > 0 {
		hash = crypto.Keccak256Hash(code)
		s.storeCode(hash, code)
	}
	return &types.StateAccount{Nonce: nonce, Balance: bal, Root: types.EmptyRootHash, CodeHash: hash[:]}, nil
}

// Storage implements state.Reader.
func (s *State) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	k := slotKey{addr, slot}
	s.mu.Lock()
	e, ok := s.slots[k]
	if ok {
		s.mu.Unlock()
		<-e.done
		s.sh.Hits.Add(1)
		return e.v, e.err
	}
	if len(s.slots) >= maxEntries { // full: answer without keeping it
		s.mu.Unlock()
		return s.loadSlot(addr, slot)
	}
	e = newEntry[common.Hash]()
	s.slots[k] = e
	s.mu.Unlock()
	if s.store != nil {
		if v, ok := s.store.Storage(addr, slot); ok {
			s.sh.Stored.Add(1)
			e.v = v
			close(e.done)
			return v, nil
		}
	}
	v, err := s.fetchSlot(addr, slot)
	s.finishSlot(addr, slot, e, v, err)
	return v, err
}

// loadSlot reads a slot from the store, or else the upstream, keeping
// nothing in memory.
func (s *State) loadSlot(addr common.Address, slot common.Hash) (common.Hash, error) {
	if s.store != nil {
		if v, ok := s.store.Storage(addr, slot); ok {
			s.sh.Stored.Add(1)
			return v, nil
		}
	}
	s.sh.Fetches.Add(1)
	v, err := s.fetchSlot(addr, slot)
	if err == nil && s.store != nil {
		s.store.PutStorage(addr, slot, v)
	}
	return v, err
}

// fetchSlot asks the upstream for one slot: with proofs, one eth_getProof
// proves the account and the slot together (and the account is kept), so a
// cold slot costs one round trip.
func (s *State) fetchSlot(addr common.Address, slot common.Hash) (common.Hash, error) {
	if s.useProofs() {
		if acct, ok := s.cachedAccount(addr); ok && (acct == nil || acct.Root == types.EmptyRootHash) {
			return common.Hash{}, nil // no storage: nothing to ask
		}
		ctx, cancel := s.ctx()
		defer cancel()
		var res proofResult
		err := s.sh.Client.Call(ctx, &res, "eth_getProof", addr, []common.Hash{slot}, s.ref)
		if err == nil || !s.proofUnavailable(err) {
			acct, values, err := s.verifySlots(addr, []common.Hash{slot}, &res, err)
			if err != nil {
				return common.Hash{}, err
			}
			s.seedAccount(addr, acct)
			return values[0], nil
		}
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var v common.Hash
	if err := s.sh.Client.Call(ctx, &v, "eth_getStorageAt", addr, slot, s.ref); err != nil {
		return common.Hash{}, s.wrap("storage", addr, err)
	}
	return v, nil
}

// cachedAccount is the account if a completed read holds it.
func (s *State) cachedAccount(addr common.Address) (*types.StateAccount, bool) {
	s.mu.Lock()
	e, ok := s.accts[addr]
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	select {
	case <-e.done:
		return e.v, e.err == nil
	default:
		return nil, false
	}
}

// seedAccount keeps an account proven along with a slot, unless a read of
// it is cached or under way.
func (s *State) seedAccount(addr common.Address, acct *types.StateAccount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accts[addr]; ok || len(s.accts) >= maxEntries {
		return
	}
	e := newEntry[*types.StateAccount]()
	e.v = copyAccount(acct)
	close(e.done)
	s.accts[addr] = e
	if s.store != nil {
		s.store.PutAccount(addr, acct)
	}
}

// Cached returns the accounts and slots read so far (successfully).
func (s *State) Cached() (map[common.Address]*types.StateAccount, map[common.Address]map[common.Hash]common.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	accts := make(map[common.Address]*types.StateAccount, len(s.accts))
	for a, e := range s.accts {
		select {
		case <-e.done:
			if e.err == nil {
				accts[a] = e.v
			}
		default:
		}
	}
	slots := make(map[common.Address]map[common.Hash]common.Hash)
	for k, e := range s.slots {
		select {
		case <-e.done:
			if e.err == nil {
				m := slots[k.addr]
				if m == nil {
					m = make(map[common.Hash]common.Hash)
					slots[k.addr] = m
				}
				m[k.slot] = e.v
			}
		default:
		}
	}
	return accts, slots
}

// Seed fills the cache with values the caller derived for this state (the
// follower: re-executing the very block that was sealed on verified parent
// values). Keys already cached or being fetched are left alone.
func (s *State) Seed(accts map[common.Address]*types.StateAccount, slots map[common.Address]map[common.Hash]common.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, v := range accts {
		if _, ok := s.accts[a]; ok || len(s.accts) >= maxEntries {
			continue
		}
		e := newEntry[*types.StateAccount]()
		e.v = copyAccount(v)
		close(e.done)
		s.accts[a] = e
	}
	for a, m := range slots {
		for k, v := range m {
			key := slotKey{a, k}
			if _, ok := s.slots[key]; ok || len(s.slots) >= maxEntries {
				continue
			}
			e := newEntry[common.Hash]()
			e.v = v
			close(e.done)
			s.slots[key] = e
		}
	}
}

var _ state.Reader = (*State)(nil)
