package remote

import (
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

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
	missing, entries = s.storedAccounts(missing, entries)
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

// storedAccounts answers from the store what it has and returns the rest.
func (s *State) storedAccounts(addrs []common.Address, entries []*entry[*types.StateAccount]) ([]common.Address, []*entry[*types.StateAccount]) {
	if s.store == nil {
		return addrs, entries
	}
	n := 0
	for i, a := range addrs {
		if v, ok := s.store.Account(a); ok {
			s.sh.Stored.Add(1)
			s.finishAccount(a, entries[i], v, nil)
			continue
		}
		addrs[n], entries[n] = a, entries[i]
		n++
	}
	return addrs[:n], entries[:n]
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
		s.sh.Fetches.Add(1)
		if err == nil && s.store != nil {
			s.store.PutAccount(a, v)
		}
		s.finishAccount(a, entries[i], v, err)
	}
	return batchErr
}

// slotJob is the slots of one account to fetch with one eth_getProof.
type slotJob struct {
	addr    common.Address
	slots   []common.Hash
	entries []*entry[common.Hash]
	acct    *entry[*types.StateAccount] // nil: the account is cached or being fetched
}

// PrefetchStorage loads the slots not cached yet (and their accounts) in
// one batch request: one eth_getProof per account with all its slots.
func (s *State) PrefetchStorage(want map[common.Address][]common.Hash) error {
	var jobs []*slotJob
	s.mu.Lock()
	for a, slots := range want {
		j := &slotJob{addr: a}
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
	jobs = s.storedSlots(jobs)
	if len(jobs) == 0 {
		return nil
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
				s.finishSlot(j.addr, k, j.entries[n], *r.Result.(*common.Hash), r.Err)
			}
			if j.acct != nil {
				v, err := s.plainAccount(reqs[i : i+3])
				i += 3
				s.sh.Fetches.Add(1)
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
		res, _ := r.Result.(*proofResult)
		acct, values, err := s.verifySlots(j.addr, j.slots, res, r.Err)
		if j.acct != nil {
			s.sh.Fetches.Add(1)
			if err == nil && s.store != nil {
				s.store.PutAccount(j.addr, acct)
			}
			s.finishAccount(j.addr, j.acct, acct, err)
		}
		for n, k := range j.slots {
			var v common.Hash
			if err == nil {
				v = values[n]
			}
			s.finishSlot(j.addr, k, j.entries[n], v, err)
		}
	}
	return batchErr
}

// storedSlots answers from the store what it has (slots and accounts) and
// returns the jobs with what is left to fetch.
func (s *State) storedSlots(jobs []*slotJob) []*slotJob {
	if s.store == nil {
		return jobs
	}
	out := jobs[:0]
	for _, j := range jobs {
		n := 0
		for i, k := range j.slots {
			if v, ok := s.store.Storage(j.addr, k); ok {
				s.sh.Stored.Add(1)
				j.entries[i].v = v
				close(j.entries[i].done)
				continue
			}
			j.slots[n], j.entries[n] = k, j.entries[i]
			n++
		}
		j.slots, j.entries = j.slots[:n], j.entries[:n]
		if j.acct != nil {
			if v, ok := s.store.Account(j.addr); ok {
				s.sh.Stored.Add(1)
				s.finishAccount(j.addr, j.acct, v, nil)
				j.acct = nil
			}
		}
		if len(j.slots) > 0 || j.acct != nil {
			out = append(out, j)
		}
	}
	return out
}

// verifySlots checks one eth_getProof answer for addr with slots: the
// account against the state root, each slot against the account's storage
// root. A nil or storage-less account has every slot zero.
func (s *State) verifySlots(addr common.Address, slots []common.Hash, res *proofResult, callErr error) (*types.StateAccount, []common.Hash, error) {
	if callErr != nil {
		return nil, nil, s.wrap("storage", addr, callErr)
	}
	s.sh.Verified.Add(1)
	acct, err := verifyAccount(s.root, addr, res)
	if err != nil {
		return nil, nil, err
	}
	values := make([]common.Hash, len(slots))
	if acct == nil || acct.Root == types.EmptyRootHash {
		return acct, values, nil
	}
	if len(res.StorageProof) != len(slots) {
		return nil, nil, fmt.Errorf("%w: %d storage proofs for %d slots of %s", ErrLying, len(res.StorageProof), len(slots), addr)
	}
	for n, k := range slots {
		p := res.StorageProof[n]
		if values[n], err = verifySlot(acct.Root, k, p.Value, p.Proof); err != nil {
			return nil, nil, err
		}
	}
	return acct, values, nil
}

// finishSlot completes a slot entry with a fetched value (kept in the
// store) or an error (dropped, so a later read asks again).
func (s *State) finishSlot(a common.Address, k common.Hash, e *entry[common.Hash], v common.Hash, err error) {
	e.v, e.err = v, err
	if err != nil {
		s.mu.Lock()
		if s.slots[slotKey{a, k}] == e {
			delete(s.slots, slotKey{a, k})
		}
		s.mu.Unlock()
	} else if s.store != nil {
		s.store.PutStorage(a, k, v)
	}
	s.sh.Fetches.Add(1)
	close(e.done)
}
