package txpool

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/opstack"
)

// devL2Config is the OP-stack dev chain's configuration.
func devL2Config(t *testing.T) *params.ChainConfig {
	t.Helper()
	g, err := chain.DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	return g.Config
}

// setL1Fees writes info's L1 fee inputs into L1Block's slots, as an
// L1-attributes deposit leaves them (the operator fee apart). L1Block gets
// code too, or a commit drops it as empty.
func setL1Fees(sdb *state.StateDB, info *opstack.L1Info) {
	sdb.SetCode(types.L1BlockAddr, []byte{0x00}, tracing.CodeChangeUnspecified)
	var scalars [32]byte
	copy(scalars[16:20], common.BigToHash(big.NewInt(int64(info.BlobBaseFeeScalar))).Bytes()[28:])
	copy(scalars[20:24], common.BigToHash(big.NewInt(int64(info.BaseFeeScalar))).Bytes()[28:])
	sdb.SetState(types.L1BlockAddr, types.L1BaseFeeSlot, common.BigToHash(info.BaseFee))
	sdb.SetState(types.L1BlockAddr, types.L1BlobBaseFeeSlot, common.BigToHash(info.BlobBaseFee))
	sdb.SetState(types.L1BlockAddr, types.L1FeeScalarsSlot, scalars)
}

// TestOPStackRules: on an OP-stack chain the pool refuses deposits with a
// clear error (a plain-Ethereum chain with op-geth's "transaction type not
// supported" alone), and a sender must also hold the L1 data fee and the
// operator fee for the whole gas limit, as op-geth's pool requires.
func TestOPStackRules(t *testing.T) {
	cfg := devL2Config(t)
	key, _ := crypto.GenerateKey()
	from := crypto.PubkeyToAddress(key.PublicKey)
	db, sdb := newTestState(t)
	info := &opstack.L1Info{BaseFee: big.NewInt(20 * params.GWei), BlobBaseFee: big.NewInt(1), BaseFeeScalar: 1368, BlobBaseFeeScalar: 810_949,
		OperatorFeeScalar: 1_000_000, OperatorFeeConstant: 5000}
	setL1Fees(sdb, info)
	var op [32]byte
	copy(op[20:24], common.BigToHash(big.NewInt(int64(info.OperatorFeeScalar))).Bytes()[28:])
	copy(op[24:32], common.BigToHash(big.NewInt(int64(info.OperatorFeeConstant))).Bytes()[24:])
	sdb.SetState(types.L1BlockAddr, types.OperatorFeeParamsSlot, op)
	head := &types.Header{Number: big.NewInt(5), Time: 100, GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei), Difficulty: new(big.Int)}
	signer := types.LatestSignerForChainID(cfg.ChainID)
	to := common.Address{0xde}
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: cfg.ChainID, Gas: 30000, GasFeeCap: big.NewInt(2 * params.GWei), GasTipCap: big.NewInt(1), To: &to, Value: big.NewInt(1), Data: make([]byte, 200)})
	st := sdb.Copy()
	l1 := types.NewL1CostFunc(cfg, st)(tx.RollupCostData(), head.Time)
	operator := types.NewOperatorCostFunc(cfg, st)(tx.Gas(), head.Time)
	if l1.Sign() == 0 || operator.IsZero() {
		t.Fatalf("fees %v %v: the fixture sets no fee inputs", l1, operator)
	}
	need := new(big.Int).Add(tx.Cost(), l1)
	need.Add(need, operator.ToBig())
	for _, c := range []struct {
		balance *big.Int
		ok      bool
	}{
		{tx.Cost(), false}, // enough on an L1, not with the L1 and operator fees
		{new(big.Int).Sub(need, big.NewInt(1)), false},
		{need, true},
	} {
		s := sdb.Copy()
		s.SetBalance(from, uint256.MustFromBig(c.balance), tracing.BalanceChangeUnspecified)
		reader := commitReader(t, db, s)
		p := New(Config{}, cfg, func() (*types.Header, state.Reader, error) { return head, reader, nil })
		_, err := p.Add(tx)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, core.ErrInsufficientFunds)) {
			t.Errorf("balance %v (need %v): %v", c.balance, need, err)
		}
		if c.ok {
			dep := types.NewTx(&types.DepositTx{From: from, To: &to, Mint: big.NewInt(1), Value: new(big.Int), Gas: 21000})
			if _, err := p.Add(dep); !errors.Is(err, ErrDepositTx) || !errors.Is(err, core.ErrTxTypeNotSupported) || !strings.Contains(err.Error(), "come from L1") {
				t.Errorf("deposit: %v", err)
			}
		}
	}
	// The plain-Ethereum dev chain refuses a deposit as go-ethereum would.
	f := newFixture(t, Config{})
	dep := types.NewTx(&types.DepositTx{From: from, To: &to, Value: new(big.Int), Gas: 21000})
	if _, err := f.pool.Add(dep); !errors.Is(err, core.ErrTxTypeNotSupported) || errors.Is(err, ErrDepositTx) {
		t.Errorf("deposit on the L1 chain: %v", err)
	}
}
