package api

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

var (
	testKey, _ = crypto.HexToECDSA(chain.DevKeys[0])
	testAddr   = crypto.PubkeyToAddress(testKey.PublicKey)
	testTo     = common.HexToAddress("0x00000000000000000000000000000000000000aa")
)

// decodeObject decodes a JSON object's members, failing on invalid JSON.
func decodeObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON %v: %s", err, b)
	}
	return m
}
