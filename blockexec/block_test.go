package blockexec_test

import (
	"crypto/ecdsa"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/blockexec"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
)

// TestBlockAsGoEthereum: blocks executed with blockexec and finalised go
// into go-ethereum's own chain through InsertChain, whose validation
// re-executes them with op-geth's state processor and checks the state
// root, the receipts root, the bloom, the gas used and, from Jovian on, the
// DA footprint as blobGasUsed: so the executor builds the blocks op-geth
// would. The receipts op-geth stores equal the executor's (status, gas, L1
// fee fields). On the "activations" chain, Isthmus at genesis, block 1
// activates Jovian and block 3 Karst: each carries its upgrade deposits
// after the L1-attributes deposit, no user transaction, and (Karst) the
// bundle's gas on its limit, gone again the next block.
func TestBlockAsGoEthereum(t *testing.T) {
	at := func(f forkrules.Fork, jovian, karst *uint64) func(t *testing.T) *core.Genesis {
		return func(t *testing.T) *core.Genesis {
			g, err := chain.DevL2GenesisAt(f)
			if err != nil {
				t.Fatal(err)
			}
			if jovian != nil {
				g.Config.JovianTime, g.Config.KarstTime = jovian, karst
				if g.Config, err = forkrules.Normalize(g.Config); err != nil {
					t.Fatal(err)
				}
			}
			return g
		}
	}
	two, six := uint64(2), uint64(6)
	for _, c := range []struct {
		name    string
		genesis func(t *testing.T) *core.Genesis
		blocks  int
		// activations are the blocks that activate a fork.
		activations map[uint64][]forkrules.Fork
	}{
		{name: "l1", genesis: func(*testing.T) *core.Genesis { return chain.DevGenesis() }, blocks: 2},
		{name: "isthmus", genesis: at(forkrules.Isthmus, nil, nil), blocks: 2},
		{name: "karst", genesis: at(forkrules.Karst, nil, nil), blocks: 2},
		{name: "activations", genesis: at(forkrules.Isthmus, &two, &six), blocks: 5,
			activations: map[uint64][]forkrules.Fork{1: {forkrules.Jovian}, 3: {forkrules.Karst}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, err := chain.Open(chain.Config{Genesis: c.genesis(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			cfg := ch.Config()
			parent := ch.Head()
			steady := parent.GasLimit
			for n := range c.blocks {
				block, receipts, a := buildBlock(t, ch, parent, n)
				number := block.NumberU64()
				var activated []forkrules.Fork
				want := steady
				if a != nil {
					activated, want = a.Forks, steady+a.ExtraGas
				}
				if exp := c.activations[number]; len(exp) != len(activated) || (len(exp) > 0 && exp[0] != activated[0]) {
					t.Fatalf("block %d activates %v, want %v", number, activated, exp)
				}
				if a != nil && a.Forks[0] == forkrules.Karst && a.ExtraGas == 0 {
					t.Fatal("Karst's activation gives its bundle no gas")
				}
				if block.GasLimit() != want {
					t.Fatalf("block %d gas limit %d, want %d", number, block.GasLimit(), want)
				}
				if _, err := ch.BlockChain().InsertChain(types.Blocks{block}); err != nil {
					t.Fatalf("block %d: go-ethereum refuses it: %v", number, err)
				}
				if got := ch.Head(); got.Hash() != block.Hash() {
					t.Fatalf("head %d %s, want the block %s", got.Number, got.Hash(), block.Hash())
				}
				stored := ch.BlockChain().GetReceiptsByHash(block.Hash())
				if len(stored) != len(receipts) {
					t.Fatalf("block %d: %d receipts stored, %d executed", number, len(stored), len(receipts))
				}
				for i, r := range receipts {
					s := stored[i]
					if r.Status != s.Status || r.CumulativeGasUsed != s.CumulativeGasUsed || r.GasUsed != s.GasUsed ||
						r.ContractAddress != s.ContractAddress || r.Bloom != s.Bloom || !sameBig(r.L1Fee, s.L1Fee) ||
						!sameBig(r.L1GasUsed, s.L1GasUsed) || !sameU64(r.OperatorFeeScalar, s.OperatorFeeScalar) {
						t.Fatalf("block %d receipt %d:\nexecuted %+v\nop-geth  %+v", number, i, r, s)
					}
					if opL1 := cfg.Optimism != nil && !block.Transactions()[i].IsDepositTx(); opL1 != (r.L1Fee != nil) {
						t.Fatalf("block %d receipt %d: L1 fee %v", number, i, r.L1Fee)
					}
				}
				parent = block.Header()
			}
		})
	}
}

func sameBig(a, b *big.Int) bool { return (a == nil) == (b == nil) && (a == nil || a.Cmp(b) == 0) }
func sameU64(a, b *uint64) bool  { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// buildBlock executes block n+1 of the dev chain on parent, two seconds
// after it: on an OP-stack chain its L1-attributes deposit and, in an
// activation block, the upgrade deposits (nothing else); otherwise three
// transfers, a transaction with a nonce gap that must not apply, and a
// contract creation. It returns the activation applied (nil if none).
func buildBlock(t *testing.T, ch *chain.Chain, parent *types.Header, n int) (*types.Block, types.Receipts, *opstack.Activation) {
	t.Helper()
	cfg := ch.Config()
	time := parent.Time + 2
	var extra []byte
	if cfg.IsHolocene(time) {
		var minBaseFee *uint64
		if cfg.IsJovian(time) {
			minBaseFee = new(uint64)
		}
		extra = eip1559.EncodeOptimismExtraData(cfg, time, cfg.BaseFeeChangeDenominator(time), cfg.ElasticityMultiplier(), minBaseFee)
	}
	gasLimit := parent.GasLimit
	if parent.Number.Sign() > 0 {
		gasLimit = blockexec.SteadyGasLimit(cfg, parent, ch.BlockChain().GetHeaderByHash(parent.ParentHash))
	}
	header := pending.NewHeader(cfg, parent, pending.Env{
		Coinbase: common.Address{0xc0}, GasLimit: gasLimit + blockexec.UpgradeGas(cfg, time, parent.Time), Time: time, Extra: extra,
		Random: common.Hash{byte(n + 1)}, BeaconRoot: parent.Hash(),
	})
	statedb, err := ch.StateAt(parent)
	if err != nil {
		t.Fatal(err)
	}
	b, err := blockexec.Open(cfg, ch.ChainContext(), parent, header, statedb)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSigner(cfg)
	apply := func(tx *types.Transaction) error {
		msg, err := core.TransactionToMessage(tx, signer, header.BaseFee)
		if err != nil {
			return err
		}
		_, err = b.Apply(tx, msg)
		return err
	}
	var a *opstack.Activation
	if cfg.Optimism != nil {
		applyL1Deposit(t, ch, cfg, parent, time, n, apply)
		if a, err = b.ApplyUpgrades(); err != nil {
			t.Fatal(err)
		}
	}
	if !b.Activation {
		applyUserTxs(t, b, cfg, signer, statedb.GetNonce, apply)
	}
	f, err := b.Flashblock(0)
	if err != nil || f.Diff == nil || len(f.Txs) != len(b.Txs) || f.TxHash == nil {
		t.Fatalf("flashblock: %+v, %v", f, err)
	}
	block, _, err := b.Finalise(blockexec.Sealing{PasserRoot: cfg.IsOptimismIsthmus(time)})
	if err != nil {
		t.Fatal(err)
	}
	return block, b.Receipts, a
}

// applyL1Deposit applies block n+1's L1-attributes deposit.
func applyL1Deposit(t *testing.T, ch *chain.Chain, cfg *params.ChainConfig, parent *types.Header, time uint64, n int, apply func(*types.Transaction) error) {
	t.Helper()
	sc, err := chain.DevL2SystemConfig()
	if err != nil {
		t.Fatal(err)
	}
	l1 := opstack.DevL1{Batcher: sc.Batcher, BaseFeeScalar: sc.BaseFeeScalar, BlobBaseFeeScalar: sc.BlobBaseFeeScalar}
	var origin *opstack.L1Info
	if n > 0 {
		blk := ch.BlockByHash(parent.Hash())
		if origin, _, err = opstack.ParseL1Info(blk.Transactions()[0].Data()); err != nil {
			t.Fatal(err)
		}
	}
	dep, err := l1.Next(origin, time).Deposit(cfg, time, parent.Time)
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(dep); err != nil {
		t.Fatalf("L1-attributes deposit: %v", err)
	}
}

// applyUserTxs applies three transfers, a creation and (refused, leaving
// the block as it was) a transaction with a nonce gap.
func applyUserTxs(t *testing.T, b *blockexec.Block, cfg *params.ChainConfig, signer types.Signer, nonceOf func(common.Address) uint64, apply func(*types.Transaction) error) {
	t.Helper()
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce := nonceOf(from)
	send := func(nonce uint64, to *common.Address, data []byte) *types.Transaction {
		return signTx(t, key, signer, &types.DynamicFeeTx{ChainID: cfg.ChainID, Nonce: nonce, GasTipCap: big.NewInt(1),
			GasFeeCap: big.NewInt(100 * params.GWei), Gas: 100_000, To: to, Value: big.NewInt(7), Data: data})
	}
	for i := range 3 {
		to := common.Address{0x10, byte(i)}
		if err := apply(send(nonce+uint64(i), &to, nil)); err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
	}
	before, gas := len(b.Txs), b.Gas.Gas()
	if err := apply(send(nonce+9, &common.Address{1}, nil)); err == nil {
		t.Fatal("a nonce gap applied")
	}
	if len(b.Txs) != before || b.Gas.Gas() != gas || b.StateDB.GetNonce(from) != nonce+3 {
		t.Fatalf("a refused transaction changed the block: %d txs, gas left %d, nonce %d", len(b.Txs), b.Gas.Gas(), b.StateDB.GetNonce(from))
	}
	// A creation storing 1 at slot 0: PUSH1 1 PUSH1 0 SSTORE STOP.
	if err := apply(send(nonce+3, nil, []byte{0x60, 0x01, 0x60, 0x00, 0x55, 0x00})); err != nil {
		t.Fatalf("creation: %v", err)
	}
}

func signTx(t *testing.T, key *ecdsa.PrivateKey, signer types.Signer, tx types.TxData) *types.Transaction {
	t.Helper()
	signed, err := types.SignNewTx(key, signer, tx)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}
