package fork

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"

	"github.com/preconf/preconf/remote"
)

// reader is the state after block number: the newest local change at or
// below it of each account and slot, else the fork block's state (from the
// store on disk, else the upstream, verified). Safe for concurrent use: a
// block's history entries are written before it becomes readable and never
// change.
type reader struct {
	db      ethdb.KeyValueStore
	touched *touched
	base    *remote.State // the fork block's state
	fork    uint64        // the fork block's number
	number  uint64
}

// Account implements state.Reader.
func (r *reader) Account(addr common.Address) (*types.StateAccount, error) {
	if r.number >= r.fork && r.touched.account(addr) { // at the fork block: funded accounts (Config.Fund)
		if v, _, ok := newest(r.db, key(accountPrefix, addr[:]), r.number); ok {
			a, err := decodeAccount(v)
			if err != nil {
				return nil, fmt.Errorf("forked state: account %s at block %d: %w", addr, r.number, err)
			}
			return a, nil
		}
	}
	return r.base.Account(addr)
}

// Storage implements state.Reader.
func (r *reader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	if r.number > r.fork && r.touched.slots(addr) {
		v, at, ok := newest(r.db, key(slotPrefix, addr[:], slot[:]), r.number)
		_, wiped, wipe := newest(r.db, key(wipePrefix, addr[:]), r.number)
		switch {
		case ok && (!wipe || at >= wiped): // a block's entries are its final values, after any wipe in it
			return common.BytesToHash(v), nil
		case wipe:
			return common.Hash{}, nil
		}
	}
	return r.base.Storage(addr, slot)
}

// Code implements state.ContractCodeReader: code is content-addressed, so
// local and forked code come from the same table (or the upstream).
func (r *reader) Code(addr common.Address, codeHash common.Hash) []byte {
	return r.base.Code(addr, codeHash)
}

// CodeSize implements state.ContractCodeReader.
func (r *reader) CodeSize(addr common.Address, codeHash common.Hash) int {
	return r.base.CodeSize(addr, codeHash)
}

// Has implements state.ContractCodeReader.
func (r *reader) Has(addr common.Address, codeHash common.Hash) bool {
	return r.base.Has(addr, codeHash)
}

// patient is the reader of the block being built: a read the upstream
// cannot answer now is tried again (backing off to maxWait) until it can or
// quit closes, instead of failing the block. The sequencer waits meanwhile;
// published state stays readable.
type patient struct {
	*reader
	quit <-chan struct{}
	log  *slog.Logger
	err  atomic.Pointer[error] // a read given up on (code reads cannot return it)
}

// Err is the first read given up on, if any: the block's execution is then
// meaningless and must not be published or sealed.
func (p *patient) Err() error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

const (
	firstWait = 500 * time.Millisecond
	maxWait   = 10 * time.Second
)

func wait[T any](p *patient, what string, addr common.Address, read func() (T, error)) (T, error) {
	d := firstWait
	for attempt := 0; ; attempt++ {
		v, err := read()
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, remote.ErrUnavailable) { // e.g. a lying upstream: no wait helps
			p.err.CompareAndSwap(nil, &err)
			return v, err
		}
		if attempt%5 == 0 {
			p.log.Warn("the block being built waits for the upstream", "read", what, "address", addr, "err", err)
		}
		t := time.NewTimer(d)
		select {
		case <-p.quit:
			t.Stop()
			p.err.CompareAndSwap(nil, &err)
			return v, err
		case <-t.C:
		}
		d = min(2*d, maxWait)
	}
}

func (p *patient) Account(addr common.Address) (*types.StateAccount, error) {
	return wait(p, "account", addr, func() (*types.StateAccount, error) { return p.reader.Account(addr) })
}

func (p *patient) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	return wait(p, "storage", addr, func() (common.Hash, error) { return p.reader.Storage(addr, slot) })
}

func (p *patient) Code(addr common.Address, codeHash common.Hash) []byte {
	c, _ := wait(p, "code", addr, func() ([]byte, error) { return p.base.ReadCode(addr, codeHash) })
	return c
}

func (p *patient) CodeSize(addr common.Address, codeHash common.Hash) int {
	return len(p.Code(addr, codeHash))
}

func (p *patient) Has(addr common.Address, codeHash common.Hash) bool {
	return len(p.Code(addr, codeHash)) > 0 || codeHash == types.EmptyCodeHash
}

var (
	_ state.Reader = (*reader)(nil)
	_ state.Reader = (*patient)(nil)
)
