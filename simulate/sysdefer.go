package simulate

import (
	"bytes"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// In zero-root mode the beacon-roots (EIP-4788) and block-hash history
// (EIP-2935) writes of each simulated block are held here instead of being
// written into the StateDB, until something could read them: a call frame
// entering the contract (only its own code reads its storage), a state
// override naming it, or a system call run in the EVM. Most requests never
// read them, and then the StateDB never builds the two contracts' state
// objects, storage maps and journal entries. The state root, which would
// hash these slots, is not computed in this mode; in compute mode they are
// written at once.
//
// A frame's entry writes them through the StateDB's journal. The EVM reports
// a frame's entry (OnEnter) before it takes the frame's snapshot, so the
// frame's own revert keeps them, while the revert of an enclosing frame (a
// smaller depth) undoes them: they are then held again, and written again by
// the next entry. When the transaction ends they belong to the StateDB.
// TestDeferredSystemWrites compares answers with the system calls run in the
// EVM, with reads of the contracts from calls, nested reverting frames,
// overrides and the system address.

// sysContracts are the contracts whose writes are deferred, by index.
var sysContracts = [2]common.Address{params.BeaconRootsAddress, params.HistoryStorageAddress}

func sysIndex(addr common.Address) int {
	for i, a := range sysContracts {
		if a == addr {
			return i
		}
	}
	return -1
}

// deferredWrites are the system contracts' writes not yet in the StateDB,
// held as the headers of the blocks that made them (a block's writes derive
// from its number, timestamp, parent hash and beacon root).
type deferredWrites struct {
	on   bool                // zero-root mode: hold
	held [2][]*types.Header  // by sysContracts index, in block order
	buf  [2][4]*types.Header // first backing arrays of held
	// wrote: the held writes are in the StateDB, written in the running
	// transaction, and a revert of a frame shallower than this depth would
	// undo them; -1: not written.
	wrote [2]int
	code  [2]uint8 // prestate code check: 0 not asked, 1 canonical, 2 not
	named [2]bool  // a state override named the contract (its code may differ from the prestate's)
}

func newDeferredWrites(on bool) deferredWrites {
	return deferredWrites{on: on, wrote: [2]int{-1, -1}}
}

// set makes block h's write into contract c (its beacon root, or its
// parent's hash), or holds it. h must not change afterwards.
func (d *deferredWrites) set(db *state.StateDB, c int, h *types.Header) {
	if !d.on {
		writeSystem(db, c, h)
		return
	}
	if d.held[c] == nil {
		d.held[c] = d.buf[c][:0]
	}
	d.held[c] = append(d.held[c], h)
}

// writeSystem writes block h's effect on system contract c: EIP-4788 keeps
// the timestamp and the beacon root in a ring of historyWindow slots, EIP-2935
// the parent's hash in a ring indexed by the parent's number.
func writeSystem(db *state.StateDB, c int, h *types.Header) {
	if c == 0 {
		i := h.Time % historyWindow
		db.SetState(params.BeaconRootsAddress, slotHash(i), slotHash(h.Time))
		db.SetState(params.BeaconRootsAddress, slotHash(i+historyWindow), *h.ParentBeaconRoot)
		return
	}
	db.SetState(params.HistoryStorageAddress, slotHash((h.Number.Uint64()-1)%historyWindow), h.ParentHash)
}

// write puts contract c's held writes into db (journaled in whatever frame
// is running).
func (d *deferredWrites) write(db *state.StateDB, c int) {
	for _, h := range d.held[c] {
		writeSystem(db, c, h)
	}
}

// flush writes every held write into db outside any call frame; nothing can
// undo them then.
func (d *deferredWrites) flush(db *state.StateDB) {
	for c := range d.held {
		d.write(db, c)
		d.held[c], d.wrote[c] = d.held[c][:0], -1
	}
}

// enter is a frame at depth entering addr.
func (d *deferredWrites) enter(db *state.StateDB, depth int, addr common.Address) {
	if c := sysIndex(addr); c >= 0 && len(d.held[c]) > 0 && d.wrote[c] < 0 {
		d.write(db, c)
		d.wrote[c] = depth
	}
}

// exit is the frame at depth ending. A write made on entering a deeper
// frame lies inside this frame's snapshot: its revert undoes the write, its
// success leaves the write to the frames enclosing this one (a later frame
// at this depth is no longer an enclosing one).
func (d *deferredWrites) exit(depth int, reverted bool) {
	for c, w := range d.wrote {
		switch {
		case depth >= w:
		case reverted:
			d.wrote[c] = -1
		default:
			d.wrote[c] = depth
		}
	}
}

// endTx is the running transaction's end: what its frames wrote stays.
func (d *deferredWrites) endTx() {
	for c := range d.wrote {
		if d.wrote[c] >= 0 {
			d.held[c], d.wrote[c] = d.held[c][:0], -1
		}
	}
}

// overrides is called before a block's state overrides apply: the held
// writes go first where an override names a system contract, whose code may
// then differ from the prestate's. Code at the system address could call
// the contracts as the system (their write path, whose gas depends on the
// slots' values at the transaction's start): writes are not held then.
func (d *deferredWrites) overrides(db *state.StateDB, so StateOverride) {
	for addr := range so {
		c := sysIndex(addr)
		if c >= 0 {
			d.named[c] = true
		}
		if addr == params.SystemAddress {
			d.on = false
		}
		if c >= 0 || addr == params.SystemAddress {
			d.flush(db)
		}
	}
}

// settle ends a block's system writes: written at once, they are
// finalised as the system calls finalise theirs (a transaction's SSTORE
// prices a slot by its value at the transaction's start).
func (d *deferredWrites) settle(db *state.StateDB) {
	if !d.on {
		db.Finalise(true)
	}
}

// beforeTx is called before a transaction from sender: one from the system
// address can write the contracts, priced by the slots' committed values,
// so the held writes are written and finalised first.
func (d *deferredWrites) beforeTx(db *state.StateDB, sender common.Address) {
	if sender == params.SystemAddress && (len(d.held[0]) > 0 || len(d.held[1]) > 0) {
		d.flush(db)
		db.Finalise(true)
	}
}

// canonicalCode reports whether system contract c holds the code whose
// hash is want. Only a state override can change these contracts' code
// (their code has no SELFDESTRUCT; neither CREATE nor an EIP-7702
// authorisation writes over existing code), so until one names the
// contract the prestate answers, once per request, without loading the
// contract into the StateDB.
func (d *deferredWrites) canonicalCode(db *state.StateDB, prestate state.Reader, c int, want common.Hash) bool {
	addr := sysContracts[c]
	if prestate == nil || d.named[c] {
		return db.GetCodeHash(addr) == want
	}
	if d.code[c] == 0 {
		f, err := prestateFact(prestate, factBeaconCode+c, func(r state.Reader) (fact, error) {
			acct, err := r.Account(addr)
			return fact{ok: err == nil && acct != nil && bytes.Equal(acct.CodeHash, want[:])}, err
		})
		d.code[c] = 2
		if err == nil && f.ok {
			d.code[c] = 1
		}
	}
	return d.code[c] == 1
}
