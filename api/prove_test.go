package api

import (
	"bytes"
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
)

// TestProverMatchesTrieProve: the prover's proof elements and value equal
// go-ethereum's Trie.Prove and Trie.Get, for present and absent keys, in
// tries with hashed keys, with nodes embedded in their parents (keys that
// share all but their last nibbles, values of one byte), and with one key.
func TestProverMatchesTrieProve(t *testing.T) {
	hashed := func(i int) []byte { return crypto.Keccak256(big.NewInt(int64(i)).Bytes()) }
	near := func(i int) []byte { // differ in the last byte only: embedded leaves
		k := bytes.Repeat([]byte{0xab}, 32)
		k[31] = byte(i)
		return k
	}
	for _, tc := range []struct {
		name  string
		n     int
		key   func(int) []byte
		value func(int) []byte
	}{
		{"one key", 1, hashed, func(i int) []byte { return []byte{0x01} }},
		{"hashed keys, 32-byte values", 1000, hashed, func(i int) []byte { return crypto.Keccak256([]byte{byte(i)}) }},
		{"hashed keys, 1-byte values", 300, hashed, func(i int) []byte { return []byte{byte(i + 1)} }},
		{"embedded nodes", 40, near, func(i int) []byte { return []byte{byte(i + 1)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := triedb.NewDatabase(rawdb.NewMemoryDatabase(), triedb.HashDefaults)
			tr := trie.NewEmpty(db)
			for i := range tc.n {
				if err := tr.Update(tc.key(i), tc.value(i)); err != nil {
					t.Fatal(err)
				}
			}
			root, nodes := tr.Commit(false)
			if err := db.Update(root, types.EmptyRootHash, 0, trienode.NewWithNodeSet(nodes), nil); err != nil {
				t.Fatal(err)
			}
			reader, err := db.NodeReader(root)
			if err != nil {
				t.Fatal(err)
			}
			tr, err = trie.New(trie.TrieID(root), db)
			if err != nil {
				t.Fatal(err)
			}
			p := newProver(reader)
			embedded := false
			for i := range tc.n + 20 { // the last 20 are absent
				key := tc.key(i)
				var want, got proofNodes
				if err := tr.Prove(key, &want); err != nil {
					t.Fatal(err)
				}
				value, err := p.prove(root, key, &got)
				if err != nil {
					t.Fatalf("key %d: %v", i, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("key %d: proof\n%v\nwant\n%v", i, got, want)
				}
				wantValue, _ := tr.Get(key)
				if !bytes.Equal(value, wantValue) || (i < tc.n) != (value != nil) {
					t.Fatalf("key %d: value %x, want %x", i, value, wantValue)
				}
				for _, n := range got {
					embedded = embedded || hasEmbedded(common.FromHex(n))
				}
			}
			if tc.name == "embedded nodes" && !embedded {
				t.Fatal("no embedded node: the case tests nothing")
			}
		})
	}
}

// hasEmbedded reports whether a branch node holds a child inline.
func hasEmbedded(enc []byte) bool {
	for i := range 16 {
		path := []byte{byte(i)}
		if ref, _, _, err := follow(enc, path); err == nil && ref != nil && !ref.hash {
			return true
		}
	}
	return false
}

// TestProverMissingNode: a trie whose nodes are not stored is an error,
// not an absent key.
func TestProverMissingNode(t *testing.T) {
	db := triedb.NewDatabase(rawdb.NewMemoryDatabase(), triedb.HashDefaults)
	reader, err := db.NodeReader(types.EmptyRootHash)
	if err != nil {
		t.Fatal(err)
	}
	var out proofNodes
	if _, err := newProver(reader).prove(common.HexToHash("0x01"), crypto.Keccak256(nil), &out); err == nil {
		t.Fatal("no error for a root that is not stored")
	}
}
