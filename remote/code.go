package remote

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Code is content-addressed: one cache for every State of an upstream
// (Shared.codes), filled from the State's Store or the upstream, each code
// checked against the code hash its account was proven with.

// fetchAccountAndCode proves an account and fetches its code in one
// exchange; the code is kept once it hashes to the proven code hash.
func (s *State) fetchAccountAndCode(ctx context.Context, addr common.Address) (*types.StateAccount, error) {
	var code hexutil.Bytes
	reqs := []*Request{
		{Method: "eth_getProof", Params: []any{addr, []string{}, s.ref}, Result: new(proofResult)},
		{Method: "eth_getCode", Params: []any{addr, s.ref}, Result: &code},
	}
	if err := s.sh.Client.Batch(ctx, reqs); err != nil {
		return nil, s.wrap("account", addr, err)
	}
	if err := reqs[0].Err; err != nil {
		if s.proofUnavailable(err) {
			return s.fetchAccount(addr)
		}
		return nil, s.wrap("account", addr, err)
	}
	s.sh.Verified.Add(1)
	acct, err := verifyAccount(s.root, addr, reqs[0].Result.(*proofResult))
	if err != nil || acct == nil || reqs[1].Err != nil {
		return acct, err // a failed code read is asked again when the code is needed
	}
	hash := common.BytesToHash(acct.CodeHash)
	if hash == types.EmptyCodeHash {
		return acct, nil
	}
	if crypto.Keccak256Hash(code) != hash {
		return nil, fmt.Errorf("%w: code of %s does not hash to %s", ErrLying, addr, hash)
	}
	s.storeCode(hash, code)
	if s.store != nil {
		s.store.PutCode(hash, code)
	}
	return acct, nil
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

// codeRequests are eth_getCode requests for codes (by hash, each from an
// account that has it), to lead a batch; finish, called once the batch is
// answered, keeps each code that hashes to its hash.
func (s *State) codeRequests(codes map[common.Hash]common.Address) ([]*Request, func()) {
	hashes := make([]common.Hash, 0, len(codes))
	reqs := make([]*Request, 0, len(codes))
	for h, a := range codes {
		hashes = append(hashes, h)
		reqs = append(reqs, &Request{Method: "eth_getCode", Params: []any{a, s.ref}, Result: new(hexutil.Bytes)})
	}
	return reqs, func() {
		for i, h := range hashes {
			code := []byte(*reqs[i].Result.(*hexutil.Bytes))
			if reqs[i].Err != nil || crypto.Keccak256Hash(code) != h {
				continue // read again, and judged, when the execution needs it
			}
			s.sh.Fetches.Add(1)
			s.storeCode(h, code)
			if s.store != nil {
				s.store.PutCode(h, code)
			}
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
	if s.store != nil {
		if c := s.store.Code(h); c != nil {
			s.sh.Stored.Add(1)
			e.v = c
			close(e.done)
			return c, nil
		}
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
	} else if s.store != nil {
		s.store.PutCode(h, code)
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

// ReadCode is the code with hash codeHash, or why it could not be read.
func (s *State) ReadCode(addr common.Address, codeHash common.Hash) ([]byte, error) {
	return s.code(addr, codeHash)
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
