package remote

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

func trieHasher() *trie.StackTrie { return trie.NewStackTrie(nil) }

// proofResult is an eth_getProof answer.
type proofResult struct {
	Balance      *hexutil.Big    `json:"balance"`
	CodeHash     common.Hash     `json:"codeHash"`
	Nonce        hexutil.Uint64  `json:"nonce"`
	StorageHash  common.Hash     `json:"storageHash"`
	AccountProof []hexutil.Bytes `json:"accountProof"`
	StorageProof []struct {
		Key   string          `json:"key"`
		Value *hexutil.Big    `json:"value"`
		Proof []hexutil.Bytes `json:"proof"`
	} `json:"storageProof"`
}

// proofDB serves proof nodes by hash to trie.VerifyProof.
type proofDB map[string][]byte

func newProofDB(nodes []hexutil.Bytes) proofDB {
	db := make(proofDB, len(nodes))
	for _, n := range nodes {
		db[string(crypto.Keccak256(n))] = n
	}
	return db
}

func (db proofDB) Has(key []byte) (bool, error) { _, ok := db[string(key)]; return ok, nil }

func (db proofDB) Get(key []byte) ([]byte, error) {
	if v, ok := db[string(key)]; ok {
		return v, nil
	}
	return nil, errors.New("proof node missing")
}

// verifyAccount checks an account proof against the state root and that the
// claimed fields are the proven ones. A proven absence returns nil.
func verifyAccount(root common.Hash, addr common.Address, res *proofResult) (*types.StateAccount, error) {
	val, err := trie.VerifyProof(root, crypto.Keccak256(addr[:]), newProofDB(res.AccountProof))
	if err != nil {
		return nil, fmt.Errorf("%w: account proof of %s against state root %s: %v", ErrLying, addr, root, err)
	}
	if len(val) == 0 {
		if (res.Balance != nil && res.Balance.ToInt().Sign() != 0) || res.Nonce != 0 {
			return nil, fmt.Errorf("%w: %s claimed to hold funds but proven absent", ErrLying, addr)
		}
		return nil, nil
	}
	acct := new(types.StateAccount)
	if err := rlp.DecodeBytes(val, acct); err != nil {
		return nil, fmt.Errorf("%w: account %s: %v", ErrLying, addr, err)
	}
	if res.Balance == nil {
		return nil, fmt.Errorf("%w: no balance claimed for %s", ErrLying, addr)
	}
	bal, overflow := uint256.FromBig(res.Balance.ToInt())
	if overflow || !bal.Eq(acct.Balance) || uint64(res.Nonce) != acct.Nonce ||
		res.StorageHash != acct.Root || !bytes.Equal(res.CodeHash[:], acct.CodeHash) {
		return nil, fmt.Errorf("%w: fields claimed for %s differ from its proof", ErrLying, addr)
	}
	return acct, nil
}

// verifySlot checks one storage proof against the account's storage root.
func verifySlot(storageRoot common.Hash, slot common.Hash, claimed *hexutil.Big, proof []hexutil.Bytes) (common.Hash, error) {
	val, err := trie.VerifyProof(storageRoot, crypto.Keccak256(slot[:]), newProofDB(proof))
	if err != nil {
		return common.Hash{}, fmt.Errorf("%w: storage proof of slot %s: %v", ErrLying, slot, err)
	}
	var v common.Hash
	if len(val) > 0 {
		_, content, _, err := rlp.Split(val)
		if err != nil || len(content) > 32 {
			return common.Hash{}, fmt.Errorf("%w: storage value of slot %s", ErrLying, slot)
		}
		v = common.BytesToHash(content)
	}
	var c common.Hash
	if claimed != nil {
		if claimed.ToInt().Sign() < 0 || claimed.ToInt().BitLen() > 256 {
			return common.Hash{}, fmt.Errorf("%w: storage value of slot %s out of range", ErrLying, slot)
		}
		c = common.BigToHash(claimed.ToInt())
	}
	if c != v {
		return common.Hash{}, fmt.Errorf("%w: slot %s claimed %s, proven %s", ErrLying, slot, c, v)
	}
	return v, nil
}
