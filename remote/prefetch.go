package remote

import (
	"errors"
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

// PrefetchStorage loads the slots not cached yet (and their accounts): one
// eth_getProof per account with its slots (at most maxProofSlots each), an
// address listed with no slots asking for its account alone. Small sets
// go out as one batch request, large ones as a few concurrent batches
// (one round trip either way).
func (s *State) PrefetchStorage(want map[common.Address][]common.Hash) error {
	return s.prefetchState(want, nil)
}

// prefetchState is PrefetchStorage with codes (by hash, each read from an
// account that has it) fetched in the first batch.
func (s *State) prefetchState(want map[common.Address][]common.Hash, codes map[common.Hash]common.Address) error {
	var jobs []*slotJob
	s.mu.Lock()
	for a, slots := range want {
		j := &slotJob{addr: a}
		if _, ok := s.accts[a]; !ok && len(s.accts) < maxEntries {
			j.acct = newEntry[*types.StateAccount]()
			s.accts[a] = j.acct
		}
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
		if len(j.slots) > 0 || j.acct != nil {
			jobs = append(jobs, splitJob(j)...)
		}
	}
	s.mu.Unlock()
	jobs = s.storedSlots(jobs)
	batches := batchJobs(jobs)
	if len(batches) == 0 && len(codes) > 0 {
		batches = [][]*slotJob{nil}
	}
	if len(batches) == 1 {
		return s.fetchSlots(batches[0], codes)
	}
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				errs[i] = s.fetchSlots(b, codes)
			} else {
				errs[i] = s.fetchSlots(b, nil)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Storage prefetch batching: at most maxProofSlots slots in one
// eth_getProof, batches of at least slotBatch keys, at most
// prefetchParallel batches at once. Upstreams answer a batch's calls one
// after the other (preconf, geth), so a few concurrent batches use more of
// their cores: bench follow-defi, ~70-350 values per flashblock, received
// → visible mean 60-102 ms at 25 Mgas/s and 78-89 ms at 50 with batches of
// 16 or more, 83-180 ms and 114-122 ms with 64 (two alternating pairs,
// load average 11-15).
const (
	maxProofSlots = 64
	slotBatch     = 16
)

// splitJob splits a job with more than maxProofSlots slots; the account
// goes with the first part.
func splitJob(j *slotJob) []*slotJob {
	if len(j.slots) <= maxProofSlots {
		return []*slotJob{j}
	}
	var out []*slotJob
	for lo := 0; lo < len(j.slots); lo += maxProofSlots {
		hi := min(lo+maxProofSlots, len(j.slots))
		p := &slotJob{addr: j.addr, slots: j.slots[lo:hi], entries: j.entries[lo:hi]}
		if lo == 0 {
			p.acct = j.acct
		}
		out = append(out, p)
	}
	return out
}

// batchJobs deals the jobs into at most prefetchParallel batches of about
// slotBatch keys or more each (a job weighs its slots and its account).
func batchJobs(jobs []*slotJob) [][]*slotJob {
	if len(jobs) == 0 {
		return nil
	}
	weight := 0
	for _, j := range jobs {
		weight += len(j.slots) + 1
	}
	n := min(prefetchParallel, max(1, weight/slotBatch), len(jobs))
	batches := make([][]*slotJob, n)
	loads := make([]int, n)
	for _, j := range jobs { // to the lightest batch so far
		k := 0
		for i := range loads {
			if loads[i] < loads[k] {
				k = i
			}
		}
		batches[k] = append(batches[k], j)
		loads[k] += len(j.slots) + 1
	}
	return batches
}

// fetchSlots fetches the jobs, and the codes, in one batch request.
func (s *State) fetchSlots(jobs []*slotJob, codes map[common.Hash]common.Address) error {
	ctx, cancel := s.ctx()
	defer cancel()
	reqs, finish := s.codeRequests(codes)
	defer finish()
	if !s.useProofs() {
		for _, j := range jobs {
			for _, k := range j.slots {
				reqs = append(reqs, &Request{Method: "eth_getStorageAt", Params: []any{j.addr, k, s.ref}, Result: new(common.Hash)})
			}
			if j.acct != nil {
				reqs = append(reqs, plainAccountRequests(j.addr, s.ref)...)
			}
		}
		batchErr := s.sh.Client.Batch(ctx, reqs)
		i := len(codes)
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
	for _, j := range jobs {
		slots := j.slots
		if slots == nil {
			slots = []common.Hash{}
		}
		reqs = append(reqs, &Request{Method: "eth_getProof", Params: []any{j.addr, slots, s.ref}, Result: new(proofResult)})
	}
	batchErr := s.sh.Client.Batch(ctx, reqs)
	for i, j := range jobs {
		r := reqs[len(codes)+i]
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
