package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/preconf/preconf/rpc"
)

type proofAnswer struct {
	Address      common.Address `json:"address"`
	AccountProof []string       `json:"accountProof"`
	Balance      *hexutil.Big   `json:"balance"`
	CodeHash     common.Hash    `json:"codeHash"`
	Nonce        hexutil.Uint64 `json:"nonce"`
	StorageHash  common.Hash    `json:"storageHash"`
	StorageProof []struct {
		Key   string       `json:"key"`
		Value *hexutil.Big `json:"value"`
		Proof []string     `json:"proof"`
	} `json:"storageProof"`
}

// verifyAccount checks an account proof against a state root and returns
// the proven account (nil when the proof shows its absence).
func verifyAccount(t *testing.T, root common.Hash, p *proofAnswer) *types.StateAccount {
	t.Helper()
	db := rawdb.NewMemoryDatabase()
	for _, node := range p.AccountProof {
		b := common.FromHex(node)
		db.Put(crypto.Keccak256(b), b)
	}
	val, err := trie.VerifyProof(root, crypto.Keccak256(p.Address[:]), db)
	if err != nil {
		t.Fatalf("account proof does not verify: %v", err)
	}
	if val == nil {
		return nil
	}
	var acct types.StateAccount
	if err := rlp.DecodeBytes(val, &acct); err != nil {
		t.Fatal(err)
	}
	return &acct
}

func TestGetProof(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	get := func(params ...string) *proofAnswer {
		t.Helper()
		var p proofAnswer
		if err := json.Unmarshal([]byte(mustCall(t, a.getProof, params...)), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	// The sender's account at every height: the proof verifies against that
	// block's state root and shows the nonce it had then.
	for n := uint64(0); n <= 4; n++ {
		h := f.chain.HeaderByNumber(n)
		p := get(quoted(testAddr.Hex()), `[]`, fmt.Sprintf(`"0x%x"`, n))
		acct := verifyAccount(t, h.Root, p)
		if acct == nil || acct.Nonce != 2*n || uint64(p.Nonce) != acct.Nonce || p.Balance.ToInt().Cmp(acct.Balance.ToBig()) != 0 {
			t.Errorf("block %d: proven %+v, answered nonce %d balance %s", n, acct, p.Nonce, p.Balance)
		}
		if p.StorageHash != types.EmptyRootHash || p.CodeHash != types.EmptyCodeHash {
			t.Errorf("block %d: storageHash %s codeHash %s", n, p.StorageHash, p.CodeHash)
		}
	}
	// A contract without storage: keys echo their input form, values are 0.
	p := get(quoted(emitter.Hex()), `["0x0","0x0000000000000000000000000000000000000000000000000000000000000001"]`, `"latest"`)
	if acct := verifyAccount(t, f.chain.Head().Root, p); acct == nil || common.BytesToHash(acct.CodeHash) != crypto.Keccak256Hash(emitterCode) {
		t.Errorf("emitter account: %+v", acct)
	}
	if len(p.StorageProof) != 2 || p.StorageProof[0].Key != "0x0" || p.StorageProof[1].Key != "0x0000000000000000000000000000000000000000000000000000000000000001" ||
		p.StorageProof[0].Value.ToInt().Sign() != 0 || len(p.StorageProof[0].Proof) != 0 {
		t.Errorf("storage proofs: %+v", p.StorageProof)
	}
	// An absent account: the proof shows absence, hashes are zero.
	absent := get(quoted(common.Address{0x99}.Hex()), `[]`)
	if verifyAccount(t, f.chain.Head().Root, absent) != nil || absent.CodeHash != (common.Hash{}) || absent.StorageHash != (common.Hash{}) {
		t.Errorf("absent account: %+v", absent)
	}
	keys := `[` + strings.Repeat(`"0x1",`, maxProofKeys) + `"0x1"]`
	for _, tc := range []struct {
		params []string
		code   int
	}{
		{[]string{quoted(testAddr.Hex()), keys}, rpc.CodeInvalidParams},
		{[]string{quoted(testAddr.Hex()), `["0xzz"]`}, rpc.CodeInvalidParams},
		{[]string{quoted(testAddr.Hex()), `["0x` + strings.Repeat("1", 66) + `"]`}, rpc.CodeInvalidParams},
		{[]string{quoted(testAddr.Hex())}, rpc.CodeInvalidParams},
		{[]string{quoted(testAddr.Hex()), `[]`, `"0x99"`}, rpc.CodeServer},
	} {
		_, err := call(t, a.getProof, tc.params...)
		var re rpc.Error
		if !errors.As(err, &re) || re.ErrorCode() != tc.code {
			t.Errorf("%.60v: %v, want code %d", tc.params, err, tc.code)
		}
	}
}

func TestConfigDevChain(t *testing.T) {
	f := newReadsFixture(t)
	var res struct {
		Current map[string]json.RawMessage `json:"current"`
		Next    json.RawMessage            `json:"next"`
		Last    json.RawMessage            `json:"last"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, f.api.config)), &res); err != nil {
		t.Fatal(err)
	}
	// Every fork is active at genesis: no next or last fork.
	if string(res.Next) != "null" || string(res.Last) != "null" {
		t.Errorf("next %s last %s", res.Next, res.Last)
	}
	for k, want := range map[string]string{"activationTime": "0", "chainId": `"0x539"`} {
		if string(res.Current[k]) != want {
			t.Errorf("%s = %s, want %s", k, res.Current[k], want)
		}
	}
	for _, want := range []string{`"P256VERIFY":"0x0000000000000000000000000000000000000100"`, `"KZG_POINT_EVALUATION"`} {
		if !strings.Contains(string(res.Current["precompiles"]), want) {
			t.Errorf("precompiles lack %s: %s", want, res.Current["precompiles"])
		}
	}
	if !strings.Contains(string(res.Current["systemContracts"]), "HISTORY_STORAGE_ADDRESS") || len(res.Current["forkId"]) != 12 {
		t.Errorf("current: %v", res.Current)
	}
}
