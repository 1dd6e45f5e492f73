package flashblock

import (
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// Metadata is the builder's unstable side information. The follower never
// depends on it for correctness (it re-executes); it is parsed for
// diagnostics (comparing the builder's claims with the re-executed result).
// Every field is optional: Base's stream has carried only block_number and
// an optional access_list since its V1 upgrade (2026), older builders send
// receipts and new_account_balances.
type Metadata struct {
	BlockNumber        Uint                            `json:"block_number"`
	NewAccountBalances map[common.Address]*hexutil.Big `json:"new_account_balances"`
	Receipts           map[common.Hash]*MetaReceipt    `json:"receipts"`
	AccessList         *AccessList                     `json:"access_list"`
}

// AccessList is a flashblock access list: the EIP-7928 account changes of
// the block's transactions min_tx_index (inclusive) to max_tx_index
// (exclusive), and the builder's hash of their RLP encoding. The changes'
// inner encoding has moved with the EIP's drafts, so it is kept raw.
type AccessList struct {
	AccountChanges []AccountChanges `json:"account_changes"`
	MinTxIndex     Uint             `json:"min_tx_index"`
	MaxTxIndex     Uint             `json:"max_tx_index"`
	FalHash        common.Hash      `json:"fal_hash"`
}

// AccountChanges is one account's entry of an access list.
type AccountChanges struct {
	Address        common.Address    `json:"address"`
	StorageChanges []json.RawMessage `json:"storageChanges"`
	StorageReads   []json.RawMessage `json:"storageReads"`
	BalanceChanges []json.RawMessage `json:"balanceChanges"`
	NonceChanges   []json.RawMessage `json:"nonceChanges"`
	CodeChanges    []json.RawMessage `json:"codeChanges"`
}

// Uint is an unsigned integer sent either as a JSON number (what the
// builders' serde emits for u64) or as a 0x-hex quantity string.
type Uint uint64

// UnmarshalJSON accepts 7 and "0x7".
func (u *Uint) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var q hexutil.Uint64
		if err := json.Unmarshal(b, &q); err != nil {
			return err
		}
		*u = Uint(q)
		return nil
	}
	var n uint64
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*u = Uint(n)
	return nil
}

// MetaReceipt is a receipt as the metadata carries it.
type MetaReceipt struct {
	Type              uint8
	Status            uint64
	CumulativeGasUsed uint64
	Logs              []MetaLog
}

// MetaLog is a log as the metadata carries it.
type MetaLog struct {
	Address common.Address `json:"address"`
	Topics  []common.Hash  `json:"topics"`
	Data    hexutil.Bytes  `json:"data"`
}

// externalTags maps the externally tagged receipt names (older builders)
// to transaction types.
var externalTags = map[string]uint8{
	"Legacy":  types.LegacyTxType,
	"Eip2930": types.AccessListTxType,
	"Eip1559": types.DynamicFeeTxType,
	"Eip4844": types.BlobTxType,
	"Eip7702": types.SetCodeTxType,
	"Deposit": 0x7e,
}

type receiptFields struct {
	Type              *hexutil.Uint64 `json:"type"`
	Status            hexutil.Uint64  `json:"status"`
	CumulativeGasUsed hexutil.Uint64  `json:"cumulativeGasUsed"`
	Logs              []MetaLog       `json:"logs"`
}

// UnmarshalJSON accepts the internally tagged form ({"type":"0x2",…}) and
// the externally tagged one ({"Eip1559":{…}}).
func (r *MetaReceipt) UnmarshalJSON(data []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	if len(obj) == 1 {
		for tag, inner := range obj {
			if typ, ok := externalTags[tag]; ok {
				var f receiptFields
				if err := json.Unmarshal(inner, &f); err != nil {
					return fmt.Errorf("receipt %s: %w", tag, err)
				}
				*r = MetaReceipt{Type: typ, Status: uint64(f.Status), CumulativeGasUsed: uint64(f.CumulativeGasUsed), Logs: f.Logs}
				return nil
			}
		}
	}
	var f receiptFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	if f.Type == nil {
		return fmt.Errorf("receipt without type")
	}
	*r = MetaReceipt{Type: uint8(*f.Type), Status: uint64(f.Status), CumulativeGasUsed: uint64(f.CumulativeGasUsed), Logs: f.Logs}
	return nil
}

// ParseMetadata decodes the metadata, or returns an error (never fatal for
// the flashblock itself). Unknown fields are ignored.
func (f *Message) ParseMetadata() (*Metadata, error) {
	m := new(Metadata)
	if len(f.Metadata) == 0 || string(f.Metadata) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(f.Metadata, m); err != nil {
		return nil, fmt.Errorf("flashblock metadata: %w", err)
	}
	return m, nil
}
