package follower

import (
	"bytes"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/remote"
)

// carryOver seeds the sealed block's state with what re-executing it already
// established, when the sealed block is exactly the one pre-confirmed: same
// parent, environment and transactions, and the same gas used, transactions
// root, receipts root and bloom as the re-execution. Its state is then the
// parent's (proof-verified values) plus the diffs the execution recorded, so
// the next block's first flashblock need not ask the upstream again for
// accounts and slots already known. Left out, to be read afresh: the
// contracts the block-end system calls write (EIP-7002/7251 queues), storage
// of accounts whose storage changed (their storage root moved), destroyed
// and re-created accounts' other slots, and empty accounts (EIP-161 may have
// removed them without a hook seeing it). The accounts whose storage
// changed are given as hints instead (remote.State.Hint). It reports
// whether it seeded.
func (e *executor) carryOver(b *openBlock, sealed *remote.Head, into *remote.State) bool {
	if b == nil || b.last == nil || sealed == nil {
		return false
	}
	h, p := sealed.Header, b.last
	if h.Number.Cmp(p.Number) != 0 || h.ParentHash != p.ParentHash || h.Coinbase != p.Coinbase || h.Time != p.Time ||
		h.GasLimit != p.GasLimit || h.MixDigest != p.MixDigest || h.BaseFee == nil || h.BaseFee.Cmp(p.BaseFee) != 0 ||
		!bytes.Equal(h.Extra, p.Extra) || !sameHash(h.ParentBeaconRoot, p.ParentBeaconRoot) ||
		h.GasUsed != p.GasUsed || h.TxHash != p.TxHash || h.ReceiptHash != p.ReceiptHash || h.Bloom != p.Bloom {
		return false
	}
	if e.config.IsOptimismIsthmus(h.Time) {
		// There the withdrawals root is the L2ToL1MessagePasser's storage
		// root (the body has no withdrawals): the builder's claim must be
		// the sealed value; the passer's storage is read afresh (it moved).
		if !sameHash(h.WithdrawalsHash, p.WithdrawalsHash) {
			return false
		}
	} else if h.WithdrawalsHash != nil && *h.WithdrawalsHash != types.EmptyWithdrawalsHash {
		return false
	}
	if len(sealed.Txs) != len(b.Txs) {
		return false
	}
	for i, tx := range b.Txs {
		if sealed.Txs[i] != tx.Hash() {
			return false
		}
	}
	skip := func(a common.Address) bool {
		return a == params.WithdrawalQueueAddress || a == params.ConsolidationQueueAddress
	}
	empty := func(a *types.StateAccount) bool {
		return a != nil && a.Nonce == 0 && a.Balance.IsZero() && bytes.Equal(a.CodeHash, types.EmptyCodeHash[:])
	}
	d := b.state.Flatten()
	oldAccts, oldSlots := b.base.Cached()
	accts := make(map[common.Address]*types.StateAccount, len(oldAccts)+len(d.Accounts))
	for a, acct := range oldAccts {
		if _, touched := d.Accounts[a]; !touched && !skip(a) && !empty(acct) {
			accts[a] = acct
		}
	}
	hints := make(map[common.Address]*types.StateAccount)
	for a, acct := range d.Accounts {
		_, storageChanged := d.Storage[a]
		_, cleared := d.Cleared[a]
		if skip(a) || cleared || empty(acct) {
			continue
		}
		if storageChanged {
			// Known but for the storage root: discovery's provisional
			// answer until it is read (speculate.go).
			if acct != nil {
				hints[a] = acct
			}
			continue
		}
		accts[a] = acct // nil: it no longer exists
	}
	into.Hint(hints)
	slots := make(map[common.Address]map[common.Hash]common.Hash)
	for a, m := range oldSlots {
		_, cleared := d.Cleared[a]
		if acct, touched := d.Accounts[a]; skip(a) || cleared || (touched && acct == nil) {
			continue
		}
		slots[a] = m // Cached returned a fresh map
	}
	for a, m := range d.Storage {
		if skip(a) || d.Accounts[a] == nil {
			continue
		}
		dst := slots[a]
		if dst == nil {
			dst = make(map[common.Hash]common.Hash, len(m))
			slots[a] = dst
		}
		for k, v := range m {
			dst[k] = v
		}
	}
	into.Seed(accts, slots)
	return true
}

func sameHash(a, b *common.Hash) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
