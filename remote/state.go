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

	mode     atomic.Int32 // Proofs, as configured
	offUntil atomic.Int64 // auto mode: plain reads until then (unix ns), after a -32601
	codes    sync.Map     // common.Hash → *entry[[]byte]
	codeN    atomic.Int64
	Fetches  atomic.Uint64 // values fetched from the upstream
	Hits     atomic.Uint64 // values served from a cache
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

	codeErr atomic.Pointer[error] // last failed code read (Code cannot return errors)
	// proofs is fixed when the State is made and only turns off (auto mode,
	// -32601): within one State, accounts read without proofs have no
	// known storage root, so proofs cannot come back for them.
	proofs atomic.Bool

	mu    sync.Mutex
	accts map[common.Address]*entry[*types.StateAccount]
	slots map[slotKey]*entry[common.Hash]
}

// NewState is the state after the sealed block h.
func (sh *Shared) NewState(h *types.Header) *State {
	hash := h.Hash()
	st := &State{
		sh: sh, number: h.Number.Uint64(), hash: hash, root: h.Root,
		ref:   map[string]any{"blockHash": hash},
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
		s.sh.Fetches.Add(1)
		return s.fetchAccount(addr)
	}
	e = newEntry[*types.StateAccount]()
	s.accts[addr] = e
	s.mu.Unlock()
	v, err := s.fetchAccount(addr)
	s.finishAccount(addr, e, v, err)
	return copyAccount(v), err
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
	s.sh.Fetches.Add(1)
	close(e.done)
}

func (s *State) fetchAccount(addr common.Address) (*types.StateAccount, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if s.useProofs() {
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

// Prefetch loads the accounts not cached yet in one batch request (the
// senders and recipients of a flashblock, before it executes).
func (s *State) Prefetch(addrs []common.Address) error {
	s.mu.Lock()
	var (
		missing []common.Address
		entries []*entry[*types.StateAccount]
	)
	for _, a := range addrs {
		if _, ok := s.accts[a]; ok || len(s.accts) >= maxEntries {
			continue
		}
		e := newEntry[*types.StateAccount]()
		s.accts[a] = e
		missing = append(missing, a)
		entries = append(entries, e)
	}
	s.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	// Large sets go out as a few concurrent batches, so the upstream (and
	// the proof checks here) can use more than one core.
	chunk := max(prefetchChunk, (len(missing)+prefetchParallel-1)/prefetchParallel)
	if len(missing) <= chunk {
		return s.prefetch(missing, entries)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs error
	)
	for lo := 0; lo < len(missing); lo += chunk {
		hi := min(lo+chunk, len(missing))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.prefetch(missing[lo:hi], entries[lo:hi]); err != nil {
				mu.Lock()
				errs = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// Prefetch batching: at least prefetchChunk accounts per request, at most
// prefetchParallel requests at once.
const (
	prefetchChunk    = 8
	prefetchParallel = 4
)

func (s *State) prefetch(missing []common.Address, entries []*entry[*types.StateAccount]) error {
	ctx, cancel := s.ctx()
	defer cancel()
	proofs := s.useProofs()
	var reqs []*Request
	for _, a := range missing {
		if proofs {
			reqs = append(reqs, &Request{Method: "eth_getProof", Params: []any{a, []string{}, s.ref}, Result: new(proofResult)})
		} else {
			reqs = append(reqs, plainAccountRequests(a, s.ref)...)
		}
	}
	batchErr := s.sh.Client.Batch(ctx, reqs)
	for i, a := range missing {
		var (
			v   *types.StateAccount
			err error
		)
		if proofs {
			r := reqs[i]
			switch {
			case r.Err == nil:
				s.sh.Verified.Add(1)
				v, err = verifyAccount(s.root, a, r.Result.(*proofResult))
			case s.proofUnavailable(r.Err):
				v, err = s.fetchAccount(a)
			default:
				err = r.Err
			}
		} else {
			v, err = s.plainAccount(reqs[3*i : 3*i+3])
		}
		s.finishAccount(a, entries[i], v, err)
	}
	return batchErr
}

// PrefetchStorage loads the slots not cached yet (and their accounts) in
// one batch request: one eth_getProof per account with all its slots.
func (s *State) PrefetchStorage(want map[common.Address][]common.Hash) error {
	type job struct {
		addr    common.Address
		slots   []common.Hash
		entries []*entry[common.Hash]
		acct    *entry[*types.StateAccount] // nil: the account is cached or being fetched
	}
	var jobs []*job
	s.mu.Lock()
	for a, slots := range want {
		j := &job{addr: a}
		for _, k := range slots {
			key := slotKey{a, k}
			if _, ok := s.slots[key]; ok || len(s.slots) >= maxEntries {
				continue
			}
			e := newEntry[common.Hash]()
			s.slots[key] = e
			j.slots = append(j.slots, k)
			j.entries = append(j.entries, e)
		}
		if len(j.slots) == 0 {
			continue
		}
		if _, ok := s.accts[a]; !ok && len(s.accts) < maxEntries {
			j.acct = newEntry[*types.StateAccount]()
			s.accts[a] = j.acct
		}
		jobs = append(jobs, j)
	}
	s.mu.Unlock()
	if len(jobs) == 0 {
		return nil
	}
	finishSlot := func(a common.Address, k common.Hash, e *entry[common.Hash], v common.Hash, err error) {
		e.v, e.err = v, err
		if err != nil {
			s.mu.Lock()
			if s.slots[slotKey{a, k}] == e {
				delete(s.slots, slotKey{a, k})
			}
			s.mu.Unlock()
		}
		s.sh.Fetches.Add(1)
		close(e.done)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if !s.useProofs() {
		var reqs []*Request
		for _, j := range jobs {
			for _, k := range j.slots {
				reqs = append(reqs, &Request{Method: "eth_getStorageAt", Params: []any{j.addr, k, s.ref}, Result: new(common.Hash)})
			}
			if j.acct != nil {
				reqs = append(reqs, plainAccountRequests(j.addr, s.ref)...)
			}
		}
		batchErr := s.sh.Client.Batch(ctx, reqs)
		i := 0
		for _, j := range jobs {
			for n, k := range j.slots {
				r := reqs[i]
				i++
				finishSlot(j.addr, k, j.entries[n], *r.Result.(*common.Hash), r.Err)
			}
			if j.acct != nil {
				v, err := s.plainAccount(reqs[i : i+3])
				i += 3
				s.finishAccount(j.addr, j.acct, v, err)
			}
		}
		return batchErr
	}
	reqs := make([]*Request, len(jobs))
	for i, j := range jobs {
		reqs[i] = &Request{Method: "eth_getProof", Params: []any{j.addr, j.slots, s.ref}, Result: new(proofResult)}
	}
	batchErr := s.sh.Client.Batch(ctx, reqs)
	for i, j := range jobs {
		r := reqs[i]
		var (
			acct *types.StateAccount
			err  = r.Err
		)
		res, _ := r.Result.(*proofResult)
		if err == nil {
			s.sh.Verified.Add(1)
			acct, err = verifyAccount(s.root, j.addr, res)
		}
		if j.acct != nil {
			s.finishAccount(j.addr, j.acct, acct, err)
		}
		if err == nil && acct != nil && len(res.StorageProof) != len(j.slots) {
			err = fmt.Errorf("%w: %d storage proofs for %d slots of %s", ErrLying, len(res.StorageProof), len(j.slots), j.addr)
		}
		for n, k := range j.slots {
			var v common.Hash
			serr := err
			if serr == nil && acct != nil && acct.Root != types.EmptyRootHash {
				p := res.StorageProof[n]
				v, serr = verifySlot(acct.Root, k, p.Value, p.Proof)
			}
			finishSlot(j.addr, k, j.entries[n], v, serr)
		}
	}
	return batchErr
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
	if len(s.slots) >= maxEntries {
		s.mu.Unlock()
		s.sh.Fetches.Add(1)
		return s.fetchSlot(addr, slot)
	}
	e = newEntry[common.Hash]()
	s.slots[k] = e
	s.mu.Unlock()
	v, err := s.fetchSlot(addr, slot)
	e.v, e.err = v, err
	if err != nil {
		s.mu.Lock()
		if s.slots[k] == e {
			delete(s.slots, k)
		}
		s.mu.Unlock()
	}
	s.sh.Fetches.Add(1)
	close(e.done)
	return v, err
}

func (s *State) fetchSlot(addr common.Address, slot common.Hash) (common.Hash, error) {
	if s.useProofs() {
		acct, err := s.Account(addr)
		if err != nil {
			return common.Hash{}, err
		}
		if s.useProofs() { // still: the account read may have switched modes
			if acct == nil || acct.Root == types.EmptyRootHash {
				return common.Hash{}, nil
			}
			ctx, cancel := s.ctx()
			defer cancel()
			var res proofResult
			err = s.sh.Client.Call(ctx, &res, "eth_getProof", addr, []common.Hash{slot}, s.ref)
			if err == nil {
				if res.StorageHash != acct.Root || len(res.StorageProof) != 1 {
					return common.Hash{}, fmt.Errorf("%w: storage proof of %s does not match its account", ErrLying, addr)
				}
				s.sh.Verified.Add(1)
				return verifySlot(acct.Root, slot, res.StorageProof[0].Value, res.StorageProof[0].Proof)
			}
			if !s.proofUnavailable(err) {
				return common.Hash{}, s.wrap("storage", addr, err)
			}
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

func (s *State) storeCode(hash common.Hash, code []byte) {
	e := newEntry[[]byte]()
	e.v = code
	close(e.done)
	if _, loaded := s.sh.codes.LoadOrStore(hash, e); !loaded {
		if s.sh.codeN.Add(1) > maxCodes {
			s.sh.codes.Clear()
			s.sh.codeN.Store(0)
		}
	}
}

// code returns the code with hash h (fetched at this block from addr).
func (s *State) code(addr common.Address, h common.Hash) ([]byte, error) {
	if h == types.EmptyCodeHash || h == (common.Hash{}) {
		return nil, nil
	}
	if v, ok := s.sh.codes.Load(h); ok {
		e := v.(*entry[[]byte])
		<-e.done
		if e.err == nil {
			s.sh.Hits.Add(1)
			return e.v, nil
		}
	}
	e := newEntry[[]byte]()
	if v, loaded := s.sh.codes.LoadOrStore(h, e); loaded {
		other := v.(*entry[[]byte])
		<-other.done
		if other.err == nil {
			return other.v, nil
		}
		s.sh.codes.CompareAndSwap(h, other, e)
	} else if s.sh.codeN.Add(1) > maxCodes {
		s.sh.codes.Clear()
		s.sh.codeN.Store(0)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var code hexutil.Bytes
	err := s.sh.Client.Call(ctx, &code, "eth_getCode", addr, s.ref)
	if err == nil && crypto.Keccak256Hash(code) != h {
		err = fmt.Errorf("%w: code of %s does not hash to %s", ErrLying, addr, h)
	}
	if err != nil {
		err = s.wrap("code", addr, err)
	}
	e.v, e.err = code, err
	if err != nil {
		s.sh.codes.CompareAndDelete(h, e)
		s.codeErr.Store(&err)
	}
	s.sh.Fetches.Add(1)
	close(e.done)
	return code, err
}

// CodeErr is the last error of a code read, if any: state.Reader's code
// methods cannot return errors, so an execution checks this afterwards.
func (s *State) CodeErr() error {
	if p := s.codeErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Code implements state.ContractCodeReader (nil when unavailable).
func (s *State) Code(addr common.Address, codeHash common.Hash) []byte {
	c, _ := s.code(addr, codeHash)
	return c
}

// CodeSize implements state.ContractCodeReader.
func (s *State) CodeSize(addr common.Address, codeHash common.Hash) int {
	c, _ := s.code(addr, codeHash)
	return len(c)
}

// Has implements state.ContractCodeReader.
func (s *State) Has(addr common.Address, codeHash common.Hash) bool {
	c, err := s.code(addr, codeHash)
	return err == nil && (len(c) > 0 || codeHash == types.EmptyCodeHash)
}

var _ state.Reader = (*State)(nil)
