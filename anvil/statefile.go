package anvil

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// State files in anvil's format (its SerializableState JSON; anvil_dumpState
// answers it gzip-compressed, --dump-state writes it plain). The accounts
// are what both sides read and write: a load sets each account's balance,
// nonce and code and each listed slot as one cheat of the open block
// (logged, pending at once, sealed with it; other slots stay, as on
// anvil). The block environment, blocks and transactions of an anvil dump
// are not replayed: the chain keeps its own history. A dump is the pending
// state — every account of the latest block's state with the open block's
// changes on top — with no blocks.

// stateFile is anvil's SerializableState.
type stateFile struct {
	Block            json.RawMessage             `json:"block"`
	Accounts         map[common.Address]*account `json:"accounts"`
	BestBlockNumber  json.RawMessage             `json:"best_block_number"`
	Blocks           []json.RawMessage           `json:"blocks"`
	Transactions     []json.RawMessage           `json:"transactions"`
	HistoricalStates json.RawMessage             `json:"historical_states"`
}

// account is anvil's SerializableAccountRecord.
type account struct {
	Nonce   uint64                      `json:"nonce"`
	Balance *hexutil.U256               `json:"balance"`
	Code    hexutil.Bytes               `json:"code"`
	Storage map[common.Hash]common.Hash `json:"storage"`
}

// MaxStateFile bounds a state file read at start (anvil_loadState is
// bounded by the request size).
const MaxStateFile = 1 << 30

// errForkDump refuses a dump on a fork: its state is the upstream's, read
// lazily, and cannot be listed.
var errForkDump = errors.New("anvil_dumpState is not available on a fork: the forked state is read from the upstream on demand and cannot be listed")

// decodeState reads a state file: JSON, or gzip-compressed JSON.
func decodeState(data []byte) (*stateFile, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if data, err = io.ReadAll(io.LimitReader(zr, MaxStateFile+1)); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if len(data) > MaxStateFile {
			return nil, fmt.Errorf("state above %d bytes", MaxStateFile)
		}
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("not an anvil state: %w", err)
	}
	return &st, nil
}

// writes are the cheat that loads st's accounts.
func (st *stateFile) writes() []sequencer.Write {
	var out []sequencer.Write
	for addr, acct := range st.Accounts {
		if acct == nil {
			continue
		}
		bal := new(uint256.Int)
		if acct.Balance != nil {
			bal = (*uint256.Int)(acct.Balance)
		}
		out = append(out, sequencer.SetBalance(addr, bal), sequencer.SetNonce(addr, acct.Nonce), sequencer.SetCode(addr, acct.Code))
		for k, v := range acct.Storage {
			out = append(out, sequencer.SetStorage(addr, k, v))
		}
	}
	return out
}

// LoadState applies an anvil state (JSON or gzip JSON) to the open block.
func LoadState(ctx context.Context, s *sequencer.Sequencer, data []byte) error {
	st, err := decodeState(data)
	if err != nil {
		return &sequencer.RefusedError{Err: err}
	}
	writes := st.writes()
	return s.Cheat(ctx, func(sequencer.StateView) ([]sequencer.Write, error) { return writes, nil })
}

// LoadStateFile is --load-state.
func LoadStateFile(ctx context.Context, s *sequencer.Sequencer, path string) error {
	data, err := readLimited(path)
	if err != nil {
		return err
	}
	if err := LoadState(ctx, s, data); err != nil {
		return fmt.Errorf("load state %s: %w", path, err)
	}
	return nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxStateFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxStateFile {
		return nil, fmt.Errorf("%s: above %d bytes", path, MaxStateFile)
	}
	return data, nil
}

// DumpState is the pending state in anvil's format (plain JSON).
func DumpState(s *sequencer.Sequencer, forked bool) ([]byte, error) {
	if forked {
		return nil, errForkDump
	}
	snap := s.Source().Current()
	c := s.Chain()
	parent := c.HeaderByHash(snap.Header.ParentHash)
	if parent == nil {
		return nil, fmt.Errorf("the pending block's parent %v is gone", snap.Header.ParentHash)
	}
	accounts, err := dumpAccounts(c, parent)
	if err != nil {
		return nil, err
	}
	overlay(accounts, snap.State)
	return json.Marshal(&stateFile{
		Block: json.RawMessage("null"), Accounts: accounts, BestBlockNumber: json.RawMessage("null"),
		Blocks: []json.RawMessage{}, Transactions: []json.RawMessage{}, HistoricalStates: json.RawMessage("null"),
	})
}

// dumpAccounts lists every account of h's state (the chain keeps the
// preimages of its trie keys).
func dumpAccounts(c sequencer.Chain, h *types.Header) (map[common.Address]*account, error) {
	db, err := c.StateAt(h)
	if err != nil {
		return nil, err
	}
	raw := db.RawDump(&state.DumpConfig{OnlyWithAddresses: true})
	out := make(map[common.Address]*account, len(raw.Accounts))
	for _, d := range raw.Accounts {
		if d.Address == nil {
			continue
		}
		bal, err := uint256.FromDecimal(d.Balance)
		if err != nil {
			return nil, fmt.Errorf("balance of %v: %w", *d.Address, err)
		}
		a := &account{Nonce: d.Nonce, Balance: (*hexutil.U256)(bal), Code: d.Code, Storage: map[common.Hash]common.Hash{}}
		for k, v := range d.Storage {
			a.Storage[k] = common.HexToHash(v)
		}
		out[*d.Address] = a
	}
	return out, nil
}

// overlay applies the open block's changes to accounts.
func overlay(accounts map[common.Address]*account, st *pending.State) {
	d := st.Flatten()
	for addr := range d.Cleared {
		if a := accounts[addr]; a != nil {
			a.Storage = map[common.Hash]common.Hash{}
		}
	}
	for addr, sa := range d.Accounts {
		if sa == nil {
			delete(accounts, addr)
			continue
		}
		a := accounts[addr]
		if a == nil {
			a = &account{Storage: map[common.Hash]common.Hash{}}
			accounts[addr] = a
		}
		a.Nonce, a.Balance = sa.Nonce, (*hexutil.U256)(sa.Balance.Clone())
		a.Code = st.Code(addr, common.BytesToHash(sa.CodeHash))
	}
	for addr, slots := range d.Storage {
		a := accounts[addr]
		if a == nil {
			continue
		}
		for k, v := range slots {
			if v == (common.Hash{}) {
				delete(a.Storage, k)
			} else {
				a.Storage[k] = v
			}
		}
	}
}

// DumpStateFile is --dump-state: the pending state written to path
// (through a temporary file, renamed).
func DumpStateFile(s *sequencer.Sequencer, forked bool, path string) error {
	data, err := DumpState(s, forked)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// dumpState: [] → the pending state, gzip-compressed JSON, as hex bytes.
func (a *API) dumpState(_ context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 1); err != nil { // anvil takes an optional preserve_historical_states
		return nil, err
	}
	data, err := DumpState(a.s, a.opts.Fork != nil)
	if err != nil {
		return nil, coded(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, coded(err)
	}
	if err := zw.Close(); err != nil {
		return nil, coded(err)
	}
	return hexutil.Bytes(buf.Bytes()), nil
}

// loadState: [hex bytes] → true.
func (a *API) loadState(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	data, err := bytesParam(p, 0)
	if err != nil {
		return nil, err
	}
	if err := LoadState(ctx, a.s, data); err != nil {
		return nil, coded(err)
	}
	return true, nil
}
