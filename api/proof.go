package api

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

// maxProofKeys caps the storage keys of one eth_getProof (as go-ethereum).
const maxProofKeys = 1024

// accountProof is the EIP-1186 answer.
type accountProof struct {
	Address      common.Address `json:"address"`
	AccountProof proofNodes     `json:"accountProof"`
	Balance      *hexutil.Big   `json:"balance"`
	CodeHash     common.Hash    `json:"codeHash"`
	Nonce        hexutil.Uint64 `json:"nonce"`
	StorageHash  common.Hash    `json:"storageHash"`
	StorageProof []storageProof `json:"storageProof"`
}

type storageProof struct {
	Key   string       `json:"key"`
	Value *hexutil.Big `json:"value"`
	Proof proofNodes   `json:"proof"`
}

// proofNodes collects the trie nodes of a Merkle proof, root first, as hex
// (it is the ethdb.KeyValueWriter a trie's Prove writes into).
type proofNodes []string

func (n *proofNodes) Put(_ []byte, value []byte) error {
	*n = append(*n, hexutil.Encode(value))
	return nil
}

func (n *proofNodes) Delete([]byte) error {
	return fmt.Errorf("proof collector: delete not supported")
}

// proofKeyLength is the byte length a storage key was given with: keys given
// as full 32 bytes are echoed as such, shorter ones as quantities.
func proofKeyLength(s string) int {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s = s[2:]
	}
	return (len(s) + 1) / 2
}

// getProof builds EIP-1186 account and storage proofs from the tries of
// the state after the selected block (the store keeps every block's tries),
// the values read from the proofs' own leaves (prove.go).
// The pending block has no state root yet, so it has no proofs.
func (a *API) getProof(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(3); err != nil {
		return nil, err
	}
	var (
		addr    common.Address
		rawKeys []string
	)
	if err := p.Required(0, &addr); err != nil {
		return nil, err
	}
	if err := argument(p, 1, &rawKeys); err != nil {
		return nil, err
	}
	ref, err := blockRefParam(p, 2)
	if err != nil {
		return nil, err
	}
	if len(rawKeys) > maxProofKeys {
		return nil, rpc.InvalidParams("too many storage keys requested (max %d, got %d)", maxProofKeys, len(rawKeys))
	}
	keys := make([]common.Hash, len(rawKeys))
	for i, k := range rawKeys {
		if keys[i], err = decodeStorageKey(k); err != nil {
			return nil, err
		}
	}
	if ref.Tag == ethjson.TagPending && a.pendingSnapshot() != nil {
		return nil, &rpc.ServerError{Msg: "proofs are not available for the pending block (its state root is not computed until it is sealed)"}
	}
	h, err := a.header(ref)
	if err != nil {
		return nil, err
	}
	nodes, err := a.chain.StateDatabase().TrieDB().NodeReader(h.Root)
	if err != nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("state not available for block %d: %v", h.Number.Uint64(), err)}
	}
	pr := newProver(nodes)
	// An absent account has zero hashes, as go-ethereum answers.
	res := &accountProof{Address: addr, AccountProof: proofNodes{}, Balance: new(hexutil.Big), StorageProof: make([]storageProof, len(keys))}
	enc, err := pr.prove(h.Root, crypto.Keccak256(addr[:]), &res.AccountProof)
	if err != nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("account proof: %v", err)}
	}
	if enc != nil {
		var acct types.StateAccount
		if err := rlp.DecodeBytes(enc, &acct); err != nil {
			return nil, &rpc.ServerError{Msg: fmt.Sprintf("account %s: %v", addr, err)}
		}
		res.Balance, res.Nonce = (*hexutil.Big)(acct.Balance.ToBig()), hexutil.Uint64(acct.Nonce)
		res.CodeHash, res.StorageHash = common.BytesToHash(acct.CodeHash), acct.Root
	}
	pr.owner = crypto.Keccak256Hash(addr[:])
	for i, key := range keys {
		if err := ctx.Err(); err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		out := hexutil.Encode(key[:])
		if proofKeyLength(rawKeys[i]) != common.HashLength {
			out = hexutil.EncodeBig(key.Big())
		}
		sp := storageProof{Key: out, Value: new(hexutil.Big), Proof: proofNodes{}}
		enc, err := pr.prove(res.StorageHash, crypto.Keccak256(key[:]), &sp.Proof)
		if err != nil {
			return nil, &rpc.ServerError{Msg: fmt.Sprintf("storage proof: %v", err)}
		}
		if enc != nil {
			_, content, _, err := rlp.Split(enc)
			if err != nil || len(content) > common.HashLength {
				return nil, &rpc.ServerError{Msg: fmt.Sprintf("storage value of %s at %s: malformed", addr, key)}
			}
			sp.Value = (*hexutil.Big)(new(big.Int).SetBytes(content))
		}
		res.StorageProof[i] = sp
	}
	return res, nil
}
