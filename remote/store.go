package remote

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Store keeps the verified values of one State beyond the process (fork
// mode's cache on disk), so that they are fetched once. Get methods report
// whether the value is known (a known account may be nil: proven absent);
// Put methods are given only values that passed verification. Safe for
// concurrent use.
type Store interface {
	Account(addr common.Address) (acct *types.StateAccount, ok bool)
	Storage(addr common.Address, slot common.Hash) (common.Hash, bool)
	// Code is the code with hash h, nil when unknown.
	Code(h common.Hash) []byte
	PutAccount(addr common.Address, acct *types.StateAccount)
	PutStorage(addr common.Address, slot, value common.Hash)
	PutCode(h common.Hash, code []byte)
}
